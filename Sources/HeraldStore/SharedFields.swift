/// A value type's fields behind one reference, copied when a shared copy is changed.
///
/// A claimed delivery or a device record crosses a dozen hands between its commit and its outcome
/// (a commit's result, a lane's handoff, a batch, a provider, the outcome); each copy of the plain
/// struct retained every string and array inside it, on the hot path's shared caches. Copying
/// this is one retain.
@usableFromInline
struct SharedFields<Fields: Hashable & Sendable>: Hashable, Sendable {
    @usableFromInline
    final class Box: @unchecked Sendable {  // Changed only while uniquely referenced.
        @usableFromInline var fields: Fields
        @usableFromInline init(_ fields: Fields) { self.fields = fields }
    }

    @usableFromInline var box: Box

    @inlinable init(_ fields: Fields) { box = Box(fields) }

    @inlinable var fields: Fields {
        get { box.fields }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
            yield &box.fields
        }
    }

    @inlinable static func == (lhs: Self, rhs: Self) -> Bool { lhs.box === rhs.box || lhs.box.fields == rhs.box.fields }
    @inlinable func hash(into hasher: inout Hasher) { box.fields.hash(into: &hasher) }
}
