/*
 * Where RedisStore keeps what (QueueAgentWorker's sessions too, see redis-job-sessions.ts). Namespaces, session ids and call ids go into keys and into the listing index
 * as the hex of their UTF-16 code units (4 digits each): any string (also one with `:`, braces or a lone
 * surrogate) gives one key and no other, and Redis's byte order of the hex is JavaScript's string order, so
 * the index lists sessions in the order MemoryStore sorts them.
 *
 * Under `<prefix>:<namespace>` (hex):
 * - `s:<session>`: a hash: `version`, `updated`, `expires` (epoch ms, `''` for never), `epoch` (a random id
 *   set by the first commit, so that a version names one state even if the session is deleted and written
 *   again), `state` (the base: the JSON of a whole state dict) and `base` (the version the base is at); a
  session moved from the BullMQ queue's first layout also has `migrated` (`queue-1`).
 * - `t:<session>`: a list of the turns committed since the base, one JSON each (see redis-codec.ts).
 * - `l:<session>`: the lease: its owner, with a time to live.
 * - `i`: a sorted set of the committed sessions (score 0), for listing in key order.
 * - `x`: a sorted set of the sessions that expire, scored by when, for purging.
 * - `sj:<session>`: the session's call ids, oldest first; `j:<call>`: a call journal's hash (`session`,
 *   `finished`); `j:<call>:e`: its entries, one JSON each.
 *
 * And `<prefix>:meta` (a hash: `schema`, the layout's version) and `<prefix>:namespaces` (a set of the hex
 * namespaces with sessions, for purging all of them).
 */

/** A key as hex of its UTF-16 code units (order-preserving, injective). */
export function encodeKey(key: string): string {
  let hex = '';
  for (let i = 0; i < key.length; i++) hex += key.charCodeAt(i).toString(16).padStart(4, '0');
  return hex;
}

/** The key an {@link encodeKey} hex stands for. */
export function decodeKey(hex: string): string {
  let key = '';
  for (let i = 0; i < hex.length; i += 4)
    key += String.fromCharCode(Number.parseInt(hex.slice(i, i + 4), 16));
  return key;
}

/** The key names of one RedisStore prefix. */
export class RedisStoreKeys {
  readonly prefix: string;

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  /** The hash holding the layout's version. */
  get meta(): string {
    return `${this.prefix}:meta`;
  }
  /** The set of the (hex) namespaces that have sessions. */
  get namespaces(): string {
    return `${this.prefix}:namespaces`;
  }
  /** The start of a namespace's keys. */
  base(namespace: string): string {
    return `${this.prefix}:${encodeKey(namespace)}`;
  }
  /** A base from a hex namespace (as the namespaces set holds them). */
  baseOfHex(hex: string): string {
    return `${this.prefix}:${hex}`;
  }
  session(namespace: string, sessionId: string): string {
    return `${this.base(namespace)}:s:${encodeKey(sessionId)}`;
  }
  turns(namespace: string, sessionId: string): string {
    return `${this.base(namespace)}:t:${encodeKey(sessionId)}`;
  }
  lease(namespace: string, sessionId: string): string {
    return `${this.base(namespace)}:l:${encodeKey(sessionId)}`;
  }
  index(namespace: string): string {
    return `${this.base(namespace)}:i`;
  }
  expiry(namespace: string): string {
    return `${this.base(namespace)}:x`;
  }
  journal(namespace: string, callId: string): string {
    return `${this.base(namespace)}:j:${encodeKey(callId)}`;
  }
}
