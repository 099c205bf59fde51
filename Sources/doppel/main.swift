import ArgumentParser
import DoppelServer
print("x")
