package analytics

// Version is the SDK's version: it is sent in context.library and in the
// User-Agent header.
const Version = "0.1.0"
