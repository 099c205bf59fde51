import DoppelCore
