/** Identifies a conversation; sessions are compared by `String(sessionId)`. Default `0`. */
export type SessionId = string | number;
