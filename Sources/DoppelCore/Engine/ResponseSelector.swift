/// Stage 5: picks the first response whose `when` holds and applies
/// its effects, both against one consistent view of the session's state.
package struct ResponseSelector: Sendable {
    let kinds: [String: StateDeclaration.Kind]

    package init(state: StateDeclaration) {
        self.kinds = state.kinds
    }

    /// Why selection failed; the session's state is unchanged.
    package enum Failure: Error, Sendable {
        case noResponseMatched
        /// `exceedsBudget`: the evaluation would have built more than `Expression.maximumBuild`.
        case expressionFailed(response: String, message: String, exceedsBudget: Bool = false)
    }

    /// Selects among `candidates` (or takes `forced`, skipping `when`) and applies effects
    /// to `data`, which the caller holds for the whole request (`Session.transact`).
    /// Returns the chosen response; `context` becomes the one to render it
    /// in (bindings bound, state as it is after the effects). It is changed
    /// in place: a copy would copy its roots on the first change.
    ///
    /// Reading a counter in one step and incrementing it in another would let
    /// two concurrent requests both see "4 of 5 used" and both succeed; running
    /// selection and effects inside the request's one transaction makes
    /// "exactly 5 succeed" true under any load. A failure throws, and the
    /// caller's transaction then keeps nothing of the request.
    ///
    /// A chosen `sequence` answers with its n-th response, n counted per
    /// `sequenceScope` (the endpoint) and the sequence's `per` key.
    ///
    /// `why` gets why the contract's own choice was made (the `when` that
    /// held, the sequence's position), after what the caller put there for
    /// a forced response: what the journal and the dashboard show.
    package func select(
        from candidates: [ResponseDefinition], forced: ResponseDefinition? = nil,
        endpointBindings: [(String, ValueTemplate)], context: inout EvaluationContext, data: inout SessionData, sequenceScope: String = "",
        why: inout Reason
    ) throws(Failure) -> ResponseDefinition {
        context.roots[.state] = .object(data.state)
        try bind(endpointBindings, into: &context, response: "the endpoint's let")
        var chosen: ResponseDefinition
        if let forced {
            chosen = forced
        } else {
            var found: ResponseDefinition?
            var passed = 0
            for candidate in candidates {
                guard let when = candidate.when else {
                    found = candidate
                    why.choice = passed == 0 ? .first : .afterWhens(checked: passed)
                    break
                }
                do throws(EvaluationError) {
                    if try when.test(in: context) {
                        found = candidate
                        why.choice = .when(when.source)
                        break
                    }
                    passed += 1
                } catch {
                    throw .expressionFailed(
                        response: candidate.name, message: "'when: \(when.source)': \(error.message)", exceedsBudget: error.exceedsBudget)
                }
            }
            guard let found else { throw .noResponseMatched }
            chosen = found
        }
        while let sequence = chosen.sequence {
            var key = sequenceScope + "|" + chosen.name
            if let per = sequence.key {
                do throws(EvaluationError) {
                    key += "|" + (try per.evaluate(in: context)).interpolationText
                } catch {
                    throw .expressionFailed(
                        response: chosen.name, message: "'per: \(per.source)': \(error.message)", exceedsBudget: error.exceedsBudget)
                }
            }
            let position = data.advanceSequence(key)
            let count = sequence.responses.count
            let index = position < count ? position : (sequence.exhausted == .cycle ? position % count : count - 1)
            why.sequence = (position + 1, index + 1, count, sequence.exhausted == .cycle)
            chosen = sequence.responses[index]
        }
        try bind(chosen.bindings, into: &context, response: chosen.name)
        for effect in chosen.effects {
            do throws(EvaluationError) {
                let change = try prepare(effect, in: context)
                // The context's reference to the state would make the change
                // copy everything it touches; it reads the state again below.
                context.roots[.state] = nil
                try apply(change, to: &data)
            } catch {
                throw .expressionFailed(
                    response: chosen.name, message: "effect '\(effect.source)': \(error.message)", exceedsBudget: error.exceedsBudget)
            }
            context.roots[.state] = .object(data.state)
        }
        return chosen
    }

    private func bind(_ bindings: [(String, ValueTemplate)], into context: inout EvaluationContext, response: String) throws(Failure) {
        for (name, template) in bindings {
            do {
                context.roots[bound: name] = try template.render(in: context)
            } catch {
                throw .expressionFailed(response: response, message: "let \(name): \(error.message)", exceedsBudget: error.exceedsBudget)
            }
        }
    }

    /// An effect with its path and value evaluated: everything it reads, read.
    struct Change {
        let effect: Effect
        let keys: [StateKey]
        let operand: JSON
    }

    /// Evaluates an effect's path and value in `context`.
    func prepare(_ effect: Effect, in context: EvaluationContext) throws(EvaluationError) -> Change {
        var keys: [StateKey] = []
        for step in effect.path {
            switch step {
            case .member(let name): keys.append(.name(name))
            case .index(let expression):
                let value = try expression.evaluate(in: context)
                if case .int(let i) = value { keys.append(.position(i)) } else { keys.append(.name(value.interpolationText)) }
            }
        }
        return Change(effect: effect, keys: keys, operand: try effect.value?.evaluate(in: context) ?? .null)
    }

    /// Makes a change in place and records how to undo it in `data`; keeps `data.stateSize`
    /// up to date. A change that would grow the state past `SessionData.maximumStateSize`,
    /// or turn a counter or collection into something else, throws, and the transaction
    /// puts everything back.
    func apply(_ change: Change, to data: inout SessionData) throws(EvaluationError) {
        let name = change.effect.name
        // Lifted out of the state, the value is referenced only here, so it changes in place.
        let present = data.state[name] != nil
        var root = data.state.take(name) ?? .null
        var delta = 0
        var undo: SessionData.Undo?
        do {
            try Self.modify(&root, change.keys[...], path: [.name(name)], change.effect.operation, change.operand, delta: &delta, undo: &undo)
        } catch {
            if present { data.state[name] = root }
            throw error
        }
        data.state[name] = root
        if let undo { data.undo.append(undo) }
        data.undo.append(.stateSize(data.stateSize))
        data.stateSize += delta
        if delta > 0, data.stateSize > SessionData.maximumStateSize {
            throw EvaluationError(
                """
                it would grow the session's state past \(SessionData.maximumStateSize >> 20) MiB; \
                reset the session (POST /__doppel/reset) or send less
                """, exceedsBudget: true)
        }
        if kinds[name] == .counter, case .int = root {
        } else if kinds[name] == .counter {
            throw EvaluationError("counter '\(name)' must stay an integer, would become \(root.typeName)")
        }
        if kinds[name] == .collection, root.objectValue == nil {
            throw EvaluationError("collection '\(name)' must stay an object of records keyed by id")
        }
    }

    /// Changes the value at `keys` in place and leaves it unchanged if it throws. `delta` gets
    /// how much the JSON size changed, counted only where something changed; `undo` gets the
    /// one entry that takes the whole change back (the shallowest one created or replaced).
    /// Each container is lifted out of its enum before it changes, so that it is uniquely
    /// referenced and Swift changes it where it is instead of copying it.
    static func modify(
        _ value: inout JSON, _ keys: ArraySlice<StateKey>, path: [StateKey], _ operation: Effect.Operation, _ operand: JSON,
        delta: inout Int, undo: inout SessionData.Undo?
    ) throws(EvaluationError) {
        guard let key = keys.first else {
            try replace(&value, path: path, operation, operand, delta: &delta, undo: &undo)
            return
        }
        // `if case` and not `switch`: a switch keeps its own copy of the
        // payload for the whole case, and every change would then copy it.
        if case .object(var object) = value {
            value = .null
            defer { value = .object(object) }
            try modifyMember(of: &object, keys, path: path, operation, operand, delta: &delta, undo: &undo)
            return
        }
        if value.isNull {
            try build(&value, keys, path: path, operation, operand, delta: &delta, undo: &undo)
            return
        }
        if case .array(var items) = value {
            value = .null
            defer { value = .array(items) }
            try modifyItem(of: &items, keys, path: path, operation, operand, delta: &delta, undo: &undo)
            return
        }
        throw EvaluationError("cannot index \(value.typeName) with '\(key.memberName)'")
    }

    /// The end of the path: `value` assigned, added to, subtracted from or deleted (made null).
    private static func replace(
        _ value: inout JSON, path: [StateKey], _ operation: Effect.Operation, _ operand: JSON, delta: inout Int, undo: inout SessionData.Undo?
    ) throws(EvaluationError) {
        let replacement: JSON
        switch operation {
        case .assign: replacement = operand
        case .add: replacement = value.isNull ? operand : try Evaluator.apply(.add, value, operand)
        case .subtract: replacement = try Evaluator.apply(.subtract, value.isNull ? .int(0) : value, operand)
        case .delete: replacement = .null
        }
        if undo == nil { undo = .stateEntry(path: path, previous: value) }
        delta += replacement.encodedSize - value.encodedSize
        value = replacement
    }

    /// `keys` into an object's member (`keys.first` names it): the member
    /// changed, created from null, or removed by the last key's delete.
    private static func modifyMember(
        of object: inout JSONObject, _ keys: ArraySlice<StateKey>, path: [StateKey], _ operation: Effect.Operation, _ operand: JSON,
        delta: inout Int, undo: inout SessionData.Undo?
    ) throws(EvaluationError) {
        let name = keys.first!.memberName
        let childPath = path + [.name(name)]
        if keys.count == 1, operation == .delete {
            guard let removed = object[name] else { return }
            if undo == nil { undo = .stateEntry(path: childPath, previous: removed) }
            delta -= removed.encodedSize + name.utf8.count + 4
            object[name] = nil
            return
        }
        let existed = object[name] != nil
        var child = object.take(name) ?? .null
        var created: SessionData.Undo?
        if !existed, undo == nil { created = .stateEntry(path: childPath, previous: nil) }
        do {
            var childUndo: SessionData.Undo? = undo ?? created
            try modify(&child, keys.dropFirst(), path: childPath, operation, operand, delta: &delta, undo: &childUndo)
            undo = childUndo
        } catch {
            if existed { object[name] = child }
            throw error
        }
        // A new member: its name, and its value measured from the null it started as.
        if !existed { delta += name.utf8.count + 4 + JSON.null.encodedSize }
        object[name] = child
    }

    /// `keys` into a null: it becomes an object holding the member
    /// `keys.first` names (an empty one for a delete); a position cannot index it.
    private static func build(
        _ value: inout JSON, _ keys: ArraySlice<StateKey>, path: [StateKey], _ operation: Effect.Operation, _ operand: JSON,
        delta: inout Int, undo: inout SessionData.Undo?
    ) throws(EvaluationError) {
        let key = keys.first!
        guard case .name(let name) = key else { throw EvaluationError("cannot index null with position \(key.memberName)") }
        var object = JSONObject()
        if !(keys.count == 1 && operation == .delete) {
            var child = JSON.null
            var childUndo: SessionData.Undo? = undo ?? .stateEntry(path: path, previous: .null)
            try modify(&child, keys.dropFirst(), path: path + [key], operation, operand, delta: &delta, undo: &childUndo)
            undo = childUndo
            // null became {name: child}: braces and the member's name, less the null that was
            // here; the child's own delta was measured from a null too, so the two cancel.
            delta += 2 + name.utf8.count + 4
            object[name] = child
        } else {
            if undo == nil { undo = .stateEntry(path: path, previous: .null) }
            delta += 2 - JSON.null.encodedSize
        }
        value = .object(object)
    }

    /// `keys` into a list (`keys.first` a position, negative from the end):
    /// the item changed, removed by the last key's delete, or appended by an
    /// assignment one past the end.
    private static func modifyItem(
        of items: inout [JSON], _ keys: ArraySlice<StateKey>, path: [StateKey], _ operation: Effect.Operation, _ operand: JSON,
        delta: inout Int, undo: inout SessionData.Undo?
    ) throws(EvaluationError) {
        let key = keys.first!
        let last = keys.count == 1
        guard case .position(let i) = key else { throw EvaluationError("cannot index a list with '\(key.memberName)'") }
        let position = i < 0 ? items.count + i : i
        guard (last && (operation == .delete || (operation == .assign && position == items.count))) || items.indices.contains(position) else {
            throw EvaluationError("index \(i) is outside a list of \(items.count)")
        }
        if last, operation == .delete {
            guard items.indices.contains(position) else { return }
            if undo == nil { undo = .removedItem(path: path, position: position, previous: items[position]) }
            delta -= items[position].encodedSize + 1
            items.remove(at: position)
        } else if last, operation == .assign, position == items.count {
            if undo == nil { undo = .appended(path: path) }
            delta += operand.encodedSize + 1
            items.append(operand)
        } else {
            var child = items[position]
            items[position] = .null
            do {
                try modify(&child, keys.dropFirst(), path: path + [.position(position)], operation, operand, delta: &delta, undo: &undo)
            } catch {
                items[position] = child
                throw error
            }
            items[position] = child
        }
    }
}
