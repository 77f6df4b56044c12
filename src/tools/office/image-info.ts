/** What a slide needs to know about an image file: its MIME type and its size in pixels. */
export interface ImageInfo {
  mime: 'image/png' | 'image/jpeg' | 'image/gif';
  width: number;
  height: number;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/**
 * Reads the type and pixel size of a PNG, JPEG or GIF from its header; `undefined` for anything else (or a
 * header too damaged to read), so a slide never embeds a file PowerPoint cannot show.
 */
export function readImageInfo(data: Uint8Array): ImageInfo | undefined {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (data.length >= 24 && PNG_SIGNATURE.every((byte, index) => data[index] === byte)) {
    return sized('image/png', view.getUint32(16), view.getUint32(20));
  }
  if (data.length >= 10 && data[0] === 0x47 && data[1] === 0x49 && data[2] === 0x46 && data[3] === 0x38) {
    return sized('image/gif', view.getUint16(6, true), view.getUint16(8, true));
  }
  if (data.length >= 4 && data[0] === 0xff && data[1] === 0xd8) return readJpeg(data, view);
  return undefined;
}

function sized(mime: ImageInfo['mime'], width: number, height: number): ImageInfo | undefined {
  return width > 0 && height > 0 ? { mime, width, height } : undefined;
}

/** Walks the JPEG segments to the first start-of-frame marker, which holds the size. */
function readJpeg(data: Uint8Array, view: DataView): ImageInfo | undefined {
  let offset = 2;
  while (offset + 4 <= data.length) {
    if (data[offset] !== 0xff) return undefined;
    const marker = data[offset + 1]!;
    if (marker === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    const length = view.getUint16(offset + 2);
    const isStartOfFrame =
      marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isStartOfFrame) {
      if (offset + 9 > data.length) return undefined;
      return sized('image/jpeg', view.getUint16(offset + 7), view.getUint16(offset + 5));
    }
    if (length < 2) return undefined;
    offset += 2 + length;
  }
  return undefined;
}
