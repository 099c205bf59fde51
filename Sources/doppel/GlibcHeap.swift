#if canImport(Glibc)
import Glibc
#endif

/// glibc's allocator controls, looked up at run time: Glibc's module map
/// leaves out `malloc.h`. Nil where the C library has none. Process tuning,
/// so it lives in the executable: the libraries never touch the allocator
/// of the process that links them.
enum GlibcHeap {
    /// `malloc_trim`: hands freed heap pages back to the system.
    static let trim: (@convention(c) (Int) -> Int32)? = symbol("malloc_trim")
    /// `mallopt`: sets one of the allocator's options.
    static let setOption: (@convention(c) (Int32, Int32) -> Int32)? = symbol("mallopt")
    /// `mallopt`'s `M_TOP_PAD`: how much more the heap grows than it must.
    static let topPad: Int32 = -2

    private static func symbol<Function>(_ name: String) -> Function? {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
        #else
        return nil
        #endif
    }
}
