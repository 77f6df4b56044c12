/**
 * Message content beyond text: a user (or any agent) message's `content` may be a list of parts, as every
 * model API takes them. Clients of models that see images and files send each part in their provider's shape
 * (OpenAI `image_url` / `file` parts, Responses `input_image` / `input_file`, Anthropic `image` / `document`
 * blocks, AI SDK `file` parts); clients of text-only models get the text, with a note for each part they cannot
 * see ({@link contentPartsText}).
 */

/** A text part. */
export interface TextPart {
  type: 'text';
  text: string;
}

/**
 * Where an image or file part's bytes are: an `http(s)` URL (sent as a URL, never fetched by lagent-ts), a
 * `data:` URL, an absolute file path (read by the client only when its `allowFilePaths` option allows the
 * path), or the bytes themselves.
 */
export type PartSource = string | URL | Uint8Array;

/** An image: PNG, JPEG, GIF or WebP. `mediaType` is read from the bytes (or the `data:` URL) when not given. */
export interface ImagePart {
  type: 'image';
  image: PartSource;
  mediaType?: string | undefined;
}

/** A file, e.g. a PDF (`mediaType: 'application/pdf'`), with its name when it has one. */
export interface FilePart {
  type: 'file';
  data: PartSource;
  mediaType: string;
  filename?: string | undefined;
}

/** One part of a message's content. */
export type ContentPart = TextPart | ImagePart | FilePart;

/**
 * Whether `value` is a list of content parts: a non-empty array whose every item is a `text`, `image` or
 * `file` part. Anything else (a tool result list, a parser's output) is ordinary content.
 */
export function isContentParts(value: unknown): value is ContentPart[] {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const part of value) {
    if (part === null || typeof part !== 'object') return false;
    const type = (part as { type?: unknown }).type;
    if (type === 'text') {
      if (typeof (part as TextPart).text !== 'string') return false;
    } else if (type === 'image') {
      if (!isSource((part as ImagePart).image)) return false;
    } else if (type === 'file') {
      const file = part as FilePart;
      if (!isSource(file.data) || typeof file.mediaType !== 'string') return false;
    } else return false;
  }
  return true;
}

function isSource(value: unknown): value is PartSource {
  return typeof value === 'string' || value instanceof URL || value instanceof Uint8Array;
}

/** A short name for a part's source, for notes: a file's name, a URL, or nothing for inline bytes. */
function sourceName(source: PartSource, filename?: string): string | undefined {
  if (filename !== undefined && filename !== '') return filename;
  if (source instanceof URL) return source.href;
  if (typeof source !== 'string' || source.startsWith('data:')) return undefined;
  if (/^https?:\/\//i.test(source)) return source;
  const slash = source.lastIndexOf('/');
  return slash === -1 ? source : source.slice(slash + 1);
}

/** The note standing for an image or file part in text: `[image: cat.png]`, `[file: report.pdf (application/pdf)]`. */
export function partNote(part: ImagePart | FilePart): string {
  if (part.type === 'image') {
    const name = sourceName(part.image);
    return name === undefined ? '[image]' : `[image: ${name}]`;
  }
  const name = sourceName(part.data, part.filename);
  return name === undefined ? `[file (${part.mediaType})]` : `[file: ${name} (${part.mediaType})]`;
}

/**
 * The parts as text, for models (and places) that take text only: text parts as they are, each image or file
 * as a note naming it (`[image: cat.png]`, `[file: report.pdf (application/pdf)]`), joined by newlines.
 */
export function contentPartsText(parts: readonly ContentPart[]): string {
  let text = '';
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (i > 0) text += '\n';
    text += part.type === 'text' ? part.text : partNote(part);
  }
  return text;
}

/**
 * The parts with inline bytes written as `data:` URLs (base64): what a message's JSON form holds, so a saved
 * state dict keeps its images and files. Parts without bytes are kept as they are (the list itself when none
 * has bytes).
 */
export function contentPartsToJSON(parts: readonly ContentPart[]): ContentPart[] {
  let copy: ContentPart[] | undefined;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    let replaced: ContentPart | undefined;
    if (part.type === 'image' && (part.image instanceof Uint8Array || part.image instanceof URL)) {
      const mediaType =
        part.mediaType ??
        (part.image instanceof Uint8Array ? sniffImageType(part.image) : undefined) ??
        'application/octet-stream';
      replaced = { ...part, image: sourceToJSON(part.image, mediaType) };
    } else if (part.type === 'file' && (part.data instanceof Uint8Array || part.data instanceof URL)) {
      replaced = { ...part, data: sourceToJSON(part.data, part.mediaType) };
    }
    if (replaced !== undefined) {
      copy ??= parts.slice();
      copy[i] = replaced;
    }
  }
  return copy ?? (parts as ContentPart[]);
}

function sourceToJSON(source: Uint8Array | URL, mediaType: string): string {
  if (source instanceof URL) return source.href;
  return `data:${mediaType};base64,${Buffer.from(source.buffer, source.byteOffset, source.byteLength).toString('base64')}`;
}

/** The image type of bytes, from their first bytes: PNG, JPEG, GIF or WebP; undefined for anything else. */
export function sniffImageType(bytes: Uint8Array): string | undefined {
  const at = (index: number) => bytes[index];
  if (bytes.length >= 8 && at(0) === 0x89 && at(1) === 0x50 && at(2) === 0x4e && at(3) === 0x47) {
    return 'image/png';
  }
  if (bytes.length >= 3 && at(0) === 0xff && at(1) === 0xd8 && at(2) === 0xff) return 'image/jpeg';
  const ascii = (start: number, end: number) => String.fromCharCode(...bytes.subarray(start, end));
  if (bytes.length >= 6 && /^GIF8[79]a$/.test(ascii(0, 6))) return 'image/gif';
  if (bytes.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}
