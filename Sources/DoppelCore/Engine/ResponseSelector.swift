/// Stages 4 and 5: picks the first response whose `when` holds and applies
/// its effects, both against one consistent view of the session's state.
public struct ResponseSelector: Sendable {
    let kinds: [String: StateDeclaration.Kind]

    public init(state: StateDeclaration) {
        self.kinds = state.kinds
    }

    /// The chosen response and the context to render it in (bindings bound,
    /// state as it is after the effects).
    public struct Selection: Sendable {
        public let response: ResponseDefinition
        public let context: EvaluationContext
    }

    /// Why selection failed; the session's state is unchanged.
    public enum Failure: Error, Sendable {
        case noResponseMatched
        /// `exceedsBudget`: the evaluation would have built more than `Expression.maximumBuild`.
        case expressionFailed(response: String, message: String, exceedsBudget: Bool = false)
    }

    /// Selects among `candidates` (or takes `forced`, skipping `when`) and applies effects
    /// to `data`, which the caller holds for the whole request (`Session.transact`).
    ///
    /// Reading a counter in one step and incrementing it in another would let
    /// two concurrent requests both see "4 of 5 used" and both succeed; running
    /// selection and effects inside the request's one transaction makes
    /// "exactly 5 succeed" true under any load. A failure throws, and the
    /// caller's transaction then keeps nothing of the request.
    ///
    /// A chosen `sequence` answers with its n-th response, n counted per
    /// `sequenceScope` (the endpoint) and the sequence's `per` key.
    public func select(
        from candidates: [ResponseDefinition], forced: ResponseDefinition? = nil,
        endpointBindings: [(String, ValueTemplate)], context base: EvaluationContext, data: inout SessionData, sequenceScope: String = ""
    ) throws(Failure) -> Selection {
        var context = base
        context.roots["state"] = .object(data.state)
        try bind(endpointBindings, into: &context, response: "the endpoint's let")
        var chosen: ResponseDefinition
        if let forced {
            chosen = forced
        } else {
            var found: ResponseDefinition?
            for candidate in candidates {
                guard let when = candidate.when else { found = candidate; break }
                do throws(EvaluationError) {
                    if try when.test(in: context) { found = candidate; break }
                } catch {
                    throw .expressionFailed(response: candidate.name, message: "'when: \(when.source)': \(error.message)", exceedsBudget: error.exceedsBudget)
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
                    throw .expressionFailed(response: chosen.name, message: "'per: \(per.source)': \(error.message)", exceedsBudget: error.exceedsBudget)
                }
            }
            let position = data.sequencePositions[key] ?? 0
            data.sequencePositions[key] = position + 1
            let count = sequence.responses.count
            chosen = sequence.responses[position < count ? position : (sequence.exhausted == .cycle ? position % count : count - 1)]
        }
        try bind(chosen.bindings, into: &context, response: chosen.name)
        for effect in chosen.effects {
            do throws(EvaluationError) {
                try apply(effect, to: &data.state, size: &data.stateSize, context: context)
            } catch {
                throw .expressionFailed(response: chosen.name, message: "effect '\(effect.source)': \(error.message)", exceedsBudget: error.exceedsBudget)
            }
            context.roots["state"] = .object(data.state)
        }
        return Selection(response: chosen, context: context)
    }

    private func bind(_ bindings: [(String, ValueTemplate)], into context: inout EvaluationContext, response: String) throws(Failure) {
        for (name, template) in bindings {
            do {
                context.roots[name] = try template.render(in: context)
            } catch {
                throw .expressionFailed(response: response, message: "let \(name): \(error.message)", exceedsBudget: error.exceedsBudget)
            }
        }
    }

    /// Applies one effect to the state, keeping `size` (the state's JSON size) up to date; an effect
    /// that would grow the state past `SessionData.maximumStateSize` fails and changes nothing.
    func apply(_ effect: Effect, to state: inout JSONObject, size: inout Int, context: EvaluationContext) throws(EvaluationError) {
        var keys: [JSONKey] = []
        for step in effect.path {
            switch step {
            case .member(let name): keys.append(.name(name))
            case .index(let expression):
                let value = try expression.evaluate(in: context)
                if case .int(let i) = value { keys.append(.position(i)) } else { keys.append(.name(value.interpolationText)) }
            }
        }
        let newValue = try effect.value?.evaluate(in: context)
        var root = state[effect.name] ?? .null
        var delta = 0
        try Self.modify(&root, keys[...], effect.operation, newValue ?? .null, delta: &delta)
        if delta > 0, size + delta > SessionData.maximumStateSize {
            throw EvaluationError("""
                effect '\(effect.source)' would grow the session's state past \(SessionData.maximumStateSize >> 20) MiB; \
                reset the session (POST /__doppel/reset) or send less
                """, exceedsBudget: true)
        }
        size += delta
        if kinds[effect.name] == .counter, case .int = root {} else if kinds[effect.name] == .counter {
            throw EvaluationError("counter '\(effect.name)' must stay an integer, would become \(root.typeName)")
        }
        if kinds[effect.name] == .collection, root.objectValue == nil {
            throw EvaluationError("collection '\(effect.name)' must stay an object of records keyed by id")
        }
        state[effect.name] = root
    }

    enum JSONKey {
        case name(String)
        case position(Int)
    }

    /// Changes the value at `keys`; `delta` gets how much the JSON size changed, counted
    /// only at the value replaced, so the cost is that of the values the effect touches.
    static func modify(_ value: inout JSON, _ keys: ArraySlice<JSONKey>, _ operation: Effect.Operation, _ operand: JSON,
                       delta: inout Int) throws(EvaluationError) {
        guard let key = keys.first else {
            let before = value.encodedSize
            switch operation {
            case .assign: value = operand
            case .add: value = value.isNull ? operand : try Evaluator.apply(.add, value, operand)
            case .subtract: value = try Evaluator.apply(.subtract, value.isNull ? .int(0) : value, operand)
            case .delete: value = .null
            }
            delta += value.encodedSize - before
            return
        }
        let last = keys.count == 1
        switch (value, key) {
        case (.object(var object), _):
            let name: String
            switch key {
            case .name(let n): name = n
            case .position(let i): name = String(i)
            }
            if last, operation == .delete {
                if let removed = object[name] { delta -= removed.encodedSize + name.utf8.count + 4 }
                object[name] = nil
            } else {
                var child = object[name] ?? .null
                if object[name] == nil { delta += name.utf8.count + 4 }
                try modify(&child, keys.dropFirst(), operation, operand, delta: &delta)
                object[name] = child
            }
            value = .object(object)
        case (.null, .name(let name)):
            var object = JSONObject()
            if !(last && operation == .delete) {
                var child = JSON.null
                delta += name.utf8.count + 4
                try modify(&child, keys.dropFirst(), operation, operand, delta: &delta)
                object[name] = child
            }
            value = .object(object)
        case (.array(var items), .position(let i)):
            let position = i < 0 ? items.count + i : i
            if last, operation == .delete {
                guard items.indices.contains(position) else { return }
                delta -= items[position].encodedSize + 1
                items.remove(at: position)
            } else if position == items.count, last, operation == .assign {
                delta += operand.encodedSize + 1
                items.append(operand)
            } else {
                guard items.indices.contains(position) else { throw EvaluationError("index \(i) is outside a list of \(items.count)") }
                try modify(&items[position], keys.dropFirst(), operation, operand, delta: &delta)
            }
            value = .array(items)
        default:
            throw EvaluationError("cannot index \(value.typeName) with \(key)")
        }
    }
}
