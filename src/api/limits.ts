// How large a request body may be, on the REST door and the MCP door alike.
//
// The largest document a client sends is a whole glossary: at most 5,000 entries. A real one (a term of
// about 30 characters, a one- or two-line definition of about 300, translations into 10 locales of about
// 40 characters each, and JSON's own keys and quotes, about 150) is about 5,000 × 900 bytes = 4.5 MB,
// so the limit is 8 MB: room for longer definitions, and still a bound on what one request can make the
// service parse. A glossary of 5,000 entries that all use every field to its maximum (2,000-character
// definitions, 200 translations of 500 characters) would be half a gigabyte: such a glossary is saved in
// parts, with upsertGlossaryEntries.
export const MAX_REQUEST_BODY_BYTES = 8 * 1024 * 1024;
