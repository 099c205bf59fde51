/// Small valid files of common binary media types, for a response a
/// document gives only a schema for (`image/png`, `type: string, format:
/// binary`): a client that decodes what it gets (an image view, a PDF
/// reader) gets something it can open, with its type.
enum SampleFiles {
    /// The file for a media type's essence, as base64; nil for a type with none here.
    static func base64(for type: String) -> String? {
        switch type.lowercased() {
        // 1×1 transparent pixel (chunks' CRCs checked).
        case "image/png": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
        case "image/gif": "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"
        case "image/webp": "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="
        // One empty page of 1 inch, its cross-reference table at the right offsets.
        case "application/pdf":
            "JVBERi0xLjQKMSAwIG9iago8PCAvVHlwZSAvQ2F0YWxvZyAvUGFnZXMgMiAwIFIgPj4KZW5kb2JqCjIgMCBvYmoKPDwgL1R5cGUgL1BhZ2VzIC9LaWRzIFszIDAgUl0gL0NvdW50IDEgPj4KZW5kb2JqCjMgMCBvYmoKPDwgL1R5cGUgL1BhZ2UgL1BhcmVudCAyIDAgUiAvTWVkaWFCb3ggWzAgMCA3MiA3Ml0gPj4KZW5kb2JqCnhyZWYKMCA0CjAwMDAwMDAwMDAgNjU1MzUgZiAKMDAwMDAwMDAwOSAwMDAwMCBuIAowMDAwMDAwMDU4IDAwMDAwIG4gCjAwMDAwMDAxMTUgMDAwMDAgbiAKdHJhaWxlcgo8PCAvU2l6ZSA0IC9Sb290IDEgMCBSID4+CnN0YXJ0eHJlZgoxODQKJSVFT0YK"
        // An empty archive: its end-of-central-directory record alone.
        case "application/zip": "UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA=="
        default: nil
        }
    }
}
