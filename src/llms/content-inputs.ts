import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import type { ChatMessage } from '../schema/chat-message';
import { type ContentPart, type PartSource, sniffImageType } from '../schema/content-parts';
import { ValidationError } from '../schema/errors';
import { MAX_IMAGE_BYTES } from './image-inputs';

/*
 * The image and file parts of user messages (`ChatMessage.parts`), read for the clients of models that take
 * them. URLs stay URLs (the provider fetches them; lagent-ts never does); `data:` URLs and bytes are checked; a
 * file path is read only when the client's `allowFilePaths` allows it, and only a regular file (no symbolic
 * link, device or FIFO). Anything that cannot be sent is a `ValidationError` before the request is made.
 */

/** The largest file part sent, in bytes: its base64 stays within Anthropic's 32 MB request. */
export const MAX_FILE_BYTES = 20_000_000;

/**
 * Which local paths an image or file part may name: `false` refuses every path, `true` allows any absolute
 * path, a list allows files inside those directories.
 */
export type FilePathPolicy = boolean | readonly string[];

/** A part ready for the wire: a URL to pass on, or the bytes as base64 with their media type. */
export type LoadedPart =
  | { kind: 'url'; url: string; mediaType: string | undefined }
  | { kind: 'data'; mediaType: string; data: string };

/** The loaded parts of one request, by part object; undefined when no message has image or file parts. */
export type LoadedParts = ReadonlyMap<ContentPart, LoadedPart> | undefined;

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const DATA_URL = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)(?:;[a-z0-9-]+=[^;,]*)*;base64,([A-Za-z0-9+/=\s]*)$/i;

/** Whether any message carries an image or file part. */
export function hasFileParts(messages: readonly ChatMessage[]): boolean {
  for (const message of messages) {
    const parts = message.parts;
    if (parts === undefined) continue;
    for (const part of parts) if (part.type !== 'text') return true;
  }
  return false;
}

/**
 * Every image and file part of the messages, read and checked; undefined when there are none (nothing read).
 * Throws a `ValidationError` naming the part when one cannot be sent: a path the policy does not allow, a file
 * that is not a regular file, too large (images {@link MAX_IMAGE_BYTES}, files {@link MAX_FILE_BYTES}), an
 * image that is not a PNG, JPEG, GIF or WebP.
 */
export async function loadParts(
  messages: readonly ChatMessage[],
  policy: FilePathPolicy,
  owner: string,
): Promise<LoadedParts> {
  if (!hasFileParts(messages)) return undefined;
  const loaded = new Map<ContentPart, LoadedPart>();
  const jobs: Promise<void>[] = [];
  for (const message of messages) {
    for (const part of message.parts ?? []) {
      if (part.type === 'text' || loaded.has(part)) continue;
      jobs.push(
        loadPart(part, policy, owner).then((value) => {
          loaded.set(part, value);
        }),
      );
    }
  }
  await Promise.all(jobs);
  return loaded;
}

async function loadPart(
  part: Exclude<ContentPart, { type: 'text' }>,
  policy: FilePathPolicy,
  owner: string,
): Promise<LoadedPart> {
  const isImage = part.type === 'image';
  const source: PartSource = isImage ? part.image : part.data;
  const limit = isImage ? MAX_IMAGE_BYTES : MAX_FILE_BYTES;
  const what = isImage ? 'an image part' : `a file part (${part.mediaType})`;
  const fail = (reason: string): never => {
    throw new ValidationError({
      field: isImage ? 'image' : 'data',
      message: `${owner}: ${what} cannot be sent: ${reason}`,
    });
  };
  if (source instanceof URL || (typeof source === 'string' && /^https?:\/\//i.test(source))) {
    const url = source instanceof URL ? source.href : source;
    if (!/^https?:/i.test(url)) fail(`only http(s) URLs are passed on, got ${url.slice(0, 40)}`);
    return { kind: 'url', url, mediaType: part.mediaType };
  }
  let bytes: Buffer;
  let declared = part.mediaType;
  if (source instanceof Uint8Array) {
    bytes = Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  } else if (typeof source === 'string' && source.startsWith('data:')) {
    const match = DATA_URL.exec(source);
    if (match === null) fail('it is not a base64 data: URL');
    const data = match![2]!.replace(/\s/g, '');
    if (Math.floor((data.length * 3) / 4) > limit) fail(`it is larger than ${megabytes(limit)}`);
    declared ??= match![1]!.toLowerCase();
    bytes = Buffer.from(data, 'base64');
  } else if (typeof source === 'string') {
    bytes = await readAllowedFile(source, policy, limit, fail);
  } else {
    return fail('its source is neither a URL, a data: URL, a path nor bytes');
  }
  if (bytes.length > limit) fail(`it is ${megabytes(bytes.length)}, larger than ${megabytes(limit)}`);
  if (isImage) {
    const sniffed = sniffImageType(bytes);
    if (sniffed === undefined || !IMAGE_TYPES.has(sniffed)) fail('it is not a PNG, JPEG, GIF or WebP image');
    return { kind: 'data', mediaType: sniffed!, data: bytes.toString('base64') };
  }
  return { kind: 'data', mediaType: declared ?? part.mediaType, data: bytes.toString('base64') };
}

/** Reads a file the policy allows: a regular file, not a link, at most `limit` bytes. */
async function readAllowedFile(
  path: string,
  policy: FilePathPolicy,
  limit: number,
  fail: (reason: string) => never,
): Promise<Buffer> {
  if (!isAbsolute(path) || path.includes('\0')) fail('a path must be absolute');
  if (policy === false) {
    fail(
      `it names the file ${path}, and this client reads no local files unless its allowFilePaths option allows them (true, or a list of directories)`,
    );
  }
  if (Array.isArray(policy)) {
    const target = resolve(path);
    const inside = policy.some((root) => {
      const rest = relative(resolve(root), target);
      return rest !== '' && !rest.startsWith('..') && !isAbsolute(rest);
    });
    if (!inside) fail(`${path} is outside the directories allowFilePaths allows`);
  }
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
    const stat = await handle.stat();
    if (!stat.isFile()) fail(`${path} is not a regular file`);
    if (stat.size > limit) fail(`${path} is ${megabytes(stat.size)}, larger than ${megabytes(limit)}`);
    const bytes = Buffer.alloc(stat.size);
    const { bytesRead } = await handle.read(bytes, 0, stat.size, 0);
    return bytes.subarray(0, bytesRead);
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    const code = (error as { code?: unknown }).code;
    return fail(
      code === 'ELOOP' ? `${path} is a symbolic link` : `${path} could not be read (${String(code)})`,
    );
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(2)} MB`;
}

/** A loaded part as a `data:` URL (for APIs that take one), or its URL. */
export function partURL(loaded: LoadedPart): string {
  return loaded.kind === 'url' ? loaded.url : `data:${loaded.mediaType};base64,${loaded.data}`;
}
