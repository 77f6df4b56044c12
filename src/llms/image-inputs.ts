import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import type { ChatMessage } from '../schema/chat-message';

/*
 * Tool-result images (`ChatMessage.images`: file paths or `data:` URLs) read for the clients of models that
 * take images. A file is read only when it is a regular file (a symbolic link, a directory or a device is
 * not followed), at most MAX_IMAGE_BYTES, and a PNG, JPEG, GIF or WebP by its first bytes: a path that names
 * anything else is reported, never sent.
 */

/** The largest image sent, in bytes: its base64 stays within Anthropic's 5 MB per image. */
export const MAX_IMAGE_BYTES = 3_750_000;

/** An image ready for the wire: its MIME type and base64 data. */
export interface ImageData {
  mediaType: string;
  data: string;
}

/** An image read, or why it was not (a note for the model). */
export type LoadedImage = ImageData | { skipped: string };

/** The loaded images of one request, by source; undefined when the messages carry none. */
export type LoadedImages = ReadonlyMap<string, LoadedImage> | undefined;

const MEDIA_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const DATA_URL = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]*)$/i;

/** The image type of a file's first bytes, or undefined when it is none of PNG, JPEG, GIF, WebP. */
function sniff(bytes: Buffer): string | undefined {
  if (bytes.length >= 8 && bytes.readUInt32BE(0) === 0x89504e47 && bytes.readUInt32BE(4) === 0x0d0a1a0a)
    return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 6 && /^GIF8[79]a$/.test(bytes.toString('latin1', 0, 6))) return 'image/gif';
  if (
    bytes.length >= 12 &&
    bytes.toString('latin1', 0, 4) === 'RIFF' &&
    bytes.toString('latin1', 8, 12) === 'WEBP'
  )
    return 'image/webp';
  return undefined;
}

function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(2)} MB`;
}

/** One image source read. Never throws: a source that cannot be sent gives the reason. */
export async function loadImage(source: string, maxBytes = MAX_IMAGE_BYTES): Promise<LoadedImage> {
  if (source.startsWith('data:')) {
    const match = DATA_URL.exec(source);
    const mediaType = match?.[1]?.toLowerCase();
    if (match === null || mediaType === undefined || !MEDIA_TYPES.has(mediaType)) {
      return { skipped: 'it is not a base64 PNG, JPEG, GIF or WebP data: URL' };
    }
    const data = match[2]!.replace(/\s/g, '');
    const size = Math.floor((data.length * 3) / 4);
    if (size > maxBytes) return { skipped: `it is larger than ${megabytes(maxBytes)}` };
    return { mediaType, data };
  }
  if (!isAbsolute(source) || source.includes('\0')) {
    return { skipped: 'it is neither an absolute file path nor a data: URL' };
  }
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    // No link followed, and no wait on a FIFO; the checks below run on what was opened.
    handle = await open(
      source,
      constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0),
    );
    const stat = await handle.stat();
    if (!stat.isFile()) return { skipped: 'it is not a regular file' };
    if (stat.size > maxBytes) return { skipped: `it is larger than ${megabytes(maxBytes)}` };
    const bytes = Buffer.alloc(stat.size);
    const { bytesRead } = await handle.read(bytes, 0, stat.size, 0);
    const content = bytes.subarray(0, bytesRead);
    const mediaType = sniff(content);
    if (mediaType === undefined) return { skipped: 'it is not a PNG, JPEG, GIF or WebP image' };
    return { mediaType, data: content.toString('base64') };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return { skipped: code === 'ELOOP' ? 'it is a symbolic link' : 'it could not be read' };
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** Every image the messages carry, read once each; undefined (nothing read) when there are none. */
export async function loadImages(
  messages: readonly ChatMessage[],
  maxBytes = MAX_IMAGE_BYTES,
): Promise<LoadedImages> {
  const sources = new Set<string>();
  for (const message of messages) {
    if (message.images === undefined) continue;
    for (const source of message.images) if (typeof source === 'string') sources.add(source);
  }
  if (sources.size === 0) return undefined;
  const loaded = new Map<string, LoadedImage>();
  await Promise.all(
    [...sources].map(async (source) => {
      loaded.set(source, await loadImage(source, maxBytes));
    }),
  );
  return loaded;
}

/** The note the model reads for an image that was not sent. */
export function skippedNote(source: string, reason: string): string {
  const name = source.startsWith('data:') ? 'a data: URL image' : `the image ${source}`;
  return `(${name} was not sent: ${reason})`;
}
