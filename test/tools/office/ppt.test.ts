import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { ActionStatusCode, ConfigurationError } from 'lagent-ts';
import { AsyncPPT, PPT } from 'lagent-ts/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readImageInfo } from '#src/tools/office/image-info';
import { loadPptxGenJS } from '#src/tools/office/ppt';

/** A real PNG of `width` x `height` pixels, all one colour. */
function png(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, 0x7f)]);
  const pixels = deflateSync(Buffer.concat(Array.from({ length: height }, () => row)));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', pixels),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** The names of the entries of a zip file, read by `unzip` (which fails on a damaged archive). */
function zipEntries(file: string): string[] {
  execFileSync('unzip', ['-tqq', file]);
  return execFileSync('unzip', ['-Z1', file], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

function zipText(file: string, entry: string): string {
  return execFileSync('unzip', ['-p', file, entry], { encoding: 'utf8' });
}

/** The text runs of one slide, in order (XML entities decoded). */
function slideTexts(file: string, slide: number): string[] {
  const xml = zipText(file, `ppt/slides/slide${slide}.xml`);
  return [...xml.matchAll(/<a:t>([^<]*)<\/a:t>/g)].map((match) =>
    match[1]!
      .replaceAll('&lt;', '<')
      .replaceAll('&gt;', '>')
      .replaceAll('&quot;', '"')
      .replaceAll('&amp;', '&'),
  );
}

const status = (text: string) => JSON.parse(text) as { status: string };

let root: string;
let outputDir: string;
let imageDir: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'lagent-ppt-'));
  outputDir = join(root, 'out');
  imageDir = join(root, 'images');
  mkdirSync(outputDir);
  mkdirSync(imageDir);
  writeFileSync(join(imageDir, 'chart.png'), png(40, 20));
  writeFileSync(join(imageDir, 'notes.txt'), 'not an image');
  writeFileSync(join(root, 'secret.png'), png(4, 4));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('AsyncPPT', () => {
  it('is a toolkit named PPT with Lagent’s five APIs', () => {
    const ppt = new AsyncPPT({ outputDir });
    expect(ppt.name).toBe('PPT');
    expect(ppt.isToolkit).toBe(true);
    expect([...ppt.apis.keys()]).toEqual([
      'create_file',
      'add_first_page',
      'add_text_page',
      'add_text_image_page',
      'submit_file',
    ]);
    expect(ppt.description.api_list?.find((api) => api.name === 'add_text_page')?.required).toEqual([
      'title',
      'bullet_items',
    ]);
  });

  it('writes a .pptx whose slides hold the titles, bullets and picture given', async () => {
    const ppt = new AsyncPPT({ outputDir, imageDirs: [imageDir] });
    const created = await ppt.call({ theme: 'Default', abs_location: 'talk.pptx' }, 'create_file');
    expect(created.state).toBe(ActionStatusCode.SUCCESS);
    expect(status(created.formatResult()).status).toBe('created a ppt file.');
    await ppt.call({ title: 'Agents & <Tools>', subtitle: 'A port of Lagent' }, 'add_first_page');
    await ppt.call({ title: 'Why', bullet_items: ' fast [SPAN]typed[SPAN] small ' }, 'add_text_page');
    const withImage = await ppt.call(
      { title: 'Results', bullet_items: 'up and to the right', image: 'chart.png' },
      'add_text_image_page',
    );
    expect(withImage.errmsg).toBeNull();
    const submitted = await ppt.call({}, 'submit_file');
    const file = join(outputDir, 'talk.pptx');
    expect(submitted.state).toBe(ActionStatusCode.SUCCESS);
    expect(status(submitted.formatResult()).status).toBe(`submitted. view ppt at ${file}`);

    const entries = zipEntries(file);
    expect(entries).toEqual(
      expect.arrayContaining(['ppt/slides/slide1.xml', 'ppt/slides/slide2.xml', 'ppt/slides/slide3.xml']),
    );
    expect(entries).not.toContain('ppt/slides/slide4.xml');
    expect(slideTexts(file, 1)).toEqual(['Agents & <Tools>', 'A port of Lagent']);
    expect(slideTexts(file, 2)).toEqual(['Why', 'fast', 'typed', 'small']);
    expect(slideTexts(file, 3)).toEqual(['Results', 'up and to the right']);
    // Titles fill the layout's title placeholder; the third page embeds the picture.
    expect(zipText(file, 'ppt/slides/slide2.xml')).toMatch(/<p:ph\s+idx="\d+"\s+type="title"/);
    expect(zipText(file, 'ppt/slides/slide3.xml')).toContain('<p:pic>');
    expect(entries.some((entry) => /^ppt\/media\/image[^/]*\.png$/.test(entry))).toBe(true);
  });

  it('keeps the picture’s proportions inside the right half of the page', async () => {
    const ppt = new AsyncPPT({ outputDir, imageDirs: [imageDir] });
    await ppt.call({ theme: 'Default', abs_location: 'picture' }, 'create_file');
    await ppt.call(
      { title: 'P', bullet_items: 'x', image: join(imageDir, 'chart.png') },
      'add_text_image_page',
    );
    await ppt.call({}, 'submit_file');
    const xml = zipText(join(outputDir, 'picture.pptx'), 'ppt/slides/slide1.xml');
    const picture = xml.slice(xml.indexOf('<p:pic>'));
    const [, x, , cx, cy] = /<a:off x="(\d+)" y="(\d+)"\/>\s*<a:ext cx="(\d+)" cy="(\d+)"/
      .exec(picture)!
      .map(Number);
    expect(cx! / cy!).toBeCloseTo(2, 2); // the 40 x 20 image
    expect(x!).toBeGreaterThan(914400 * 5); // past the middle of a 10-inch page
  });

  it('applies a configured theme: slide size and background colour', async () => {
    const ppt = new AsyncPPT({
      outputDir,
      themes: { Night: { layout: 'LAYOUT_4x3', background: '0b1020', titleColor: 'FFFFFF' } },
    });
    const unknown = await ppt.call({ theme: 'Sunny', abs_location: 'x.pptx' }, 'create_file');
    expect(unknown.state).toBe(ActionStatusCode.API_ERROR);
    expect(unknown.errmsg).toContain('Default, Night');
    await ppt.call({ theme: 'Night', abs_location: 'night.pptx' }, 'create_file');
    await ppt.call({ title: 'Dark', subtitle: '' }, 'add_first_page');
    await ppt.call({}, 'submit_file');
    const file = join(outputDir, 'night.pptx');
    expect(zipText(file, 'ppt/presentation.xml')).toMatch(/<p:sldSz cx="9144000" cy="6858000"/);
    const layouts = zipEntries(file).filter((entry) =>
      /^ppt\/slideLayouts\/slideLayout\d+\.xml$/.test(entry),
    );
    expect(layouts.some((entry) => zipText(file, entry).includes('0B1020'))).toBe(true);
    expect(slideTexts(file, 1)).toEqual(['Dark']); // an empty subtitle adds nothing
  });

  it('draws a theme’s background picture on every layout, and names the document after its title page', async () => {
    const ppt = new AsyncPPT({
      outputDir,
      themes: { Photo: { backgroundImage: join(imageDir, 'chart.png') } },
    });
    await ppt.call({ theme: 'Photo', abs_location: 'photo.pptx' }, 'create_file');
    await ppt.call({ title: 'Annual report', subtitle: '2026' }, 'add_first_page');
    await ppt.call({}, 'submit_file');
    const file = join(outputDir, 'photo.pptx');
    const layouts = zipEntries(file).filter((entry) =>
      /^ppt\/slideLayouts\/slideLayout\d+\.xml$/.test(entry),
    );
    expect(layouts.length).toBeGreaterThanOrEqual(3);
    expect(
      layouts.filter((entry) => /<p:bg>\s*<p:bgPr>\s*<a:blipFill/.test(zipText(file, entry))).length,
    ).toBe(3);
    expect(zipText(file, 'docProps/core.xml')).toContain('<dc:title>Annual report</dc:title>');
  });

  it('keeps one presentation per session', async () => {
    const ppt = new AsyncPPT({ outputDir });
    await ppt.call({ theme: 'Default', abs_location: 'one.pptx' }, 'create_file', { sessionId: 1 });
    await ppt.call({ theme: 'Default', abs_location: 'two.pptx' }, 'create_file', { sessionId: 2 });
    await ppt.call({ title: 'First', subtitle: 's1' }, 'add_first_page', { sessionId: 1 });
    await ppt.call({ title: 'Second', subtitle: 's2' }, 'add_first_page', { sessionId: 2 });
    const lonely = await ppt.call({ title: 'Nobody', subtitle: '' }, 'add_first_page', { sessionId: 3 });
    expect(lonely.state).toBe(ActionStatusCode.API_ERROR);
    await ppt.call({}, 'submit_file', { sessionId: 1 });
    await ppt.call({}, 'submit_file', { sessionId: 2 });
    expect(slideTexts(join(outputDir, 'one.pptx'), 1)).toEqual(['First', 's1']);
    expect(slideTexts(join(outputDir, 'two.pptx'), 1)).toEqual(['Second', 's2']);
  });

  it('answers mistakes with a sentence instead of throwing', async () => {
    const ppt = new AsyncPPT({ outputDir, imageDirs: [imageDir] });
    const early = await ppt.call({ title: 'T', bullet_items: 'a' }, 'add_text_page');
    expect(early).toMatchObject({ state: ActionStatusCode.API_ERROR });
    expect(early.errmsg).toMatch(/call PPT\.create_file first/);
    const submitEarly = await ppt.call({}, 'submit_file');
    expect(submitEarly.errmsg).toMatch(/call PPT\.create_file first/);

    for (const location of ['../escape.pptx', join(root, 'escape.pptx'), 'sub/../../escape.pptx', '']) {
      const refused = await ppt.call({ theme: 'Default', abs_location: location }, 'create_file');
      expect(refused.state, location).toBe(ActionStatusCode.API_ERROR);
      expect(refused.errmsg, location).toMatch(/file name/);
    }
    expect(existsSync(join(root, 'escape.pptx'))).toBe(false);

    await ppt.call({ theme: 'Default', abs_location: 'nested/deck.pptx' }, 'create_file');
    const empty = await ppt.call({}, 'submit_file');
    expect(empty.errmsg).toMatch(/no pages yet/);

    const missing = await ppt.call(
      { title: 'T', bullet_items: 'a', image: 'nowhere.png' },
      'add_text_image_page',
    );
    expect(missing.errmsg).toMatch(/There is no image at .*nowhere\.png/);
    const outside = await ppt.call(
      { title: 'T', bullet_items: 'a', image: '../secret.png' },
      'add_text_image_page',
    );
    expect(outside.errmsg).toMatch(/outside the folders images may come from/);
    const notImage = await ppt.call(
      { title: 'T', bullet_items: 'a', image: 'notes.txt' },
      'add_text_image_page',
    );
    expect(notImage.errmsg).toMatch(/not a PNG, JPEG or GIF/);
    symlinkSync(join(root, 'secret.png'), join(imageDir, 'link.png'));
    const linked = await ppt.call(
      { title: 'T', bullet_items: 'a', image: 'link.png' },
      'add_text_image_page',
    );
    expect(linked.errmsg).toMatch(/leads outside/);

    // None of the refused pages was added; a good one still works and lands in the nested folder.
    await ppt.call({ title: 'Fine', bullet_items: 'ok' }, 'add_text_page');
    const saved = await ppt.call({}, 'submit_file');
    expect(saved.state).toBe(ActionStatusCode.SUCCESS);
    const file = join(outputDir, 'nested', 'deck.pptx');
    expect(zipEntries(file)).not.toContain('ppt/slides/slide2.xml');
    expect(slideTexts(file, 1)).toEqual(['Fine', 'ok']);
  });

  it('refuses to save through a link that leaves the output directory', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'lagent-ppt-outside-'));
    try {
      symlinkSync(outside, join(outputDir, 'jump'));
      const ppt = new AsyncPPT({ outputDir });
      await ppt.call({ theme: 'Default', abs_location: 'jump/deck.pptx' }, 'create_file');
      await ppt.call({ title: 'T', subtitle: '' }, 'add_first_page');
      const refused = await ppt.call({}, 'submit_file');
      expect(refused.state).toBe(ActionStatusCode.API_ERROR);
      expect(refused.errmsg).toMatch(/outside the output directory/);
      expect(existsSync(join(outside, 'deck.pptx'))).toBe(false);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('refuses bad configuration when built', () => {
    expect(() => new AsyncPPT({} as never)).toThrow(ConfigurationError);
    expect(() => new PPT({ outputDir: '' })).toThrow(/PPT needs outputDir/);
    expect(
      () => new AsyncPPT({ outputDir, themes: { Gone: { backgroundImage: join(root, 'none.png') } } }),
    ).toThrow(/cannot read backgroundImage/);
    expect(
      () => new AsyncPPT({ outputDir, themes: { Text: { backgroundImage: join(imageDir, 'notes.txt') } } }),
    ).toThrow(/not a PNG, JPEG or GIF/);
    expect(() => new AsyncPPT({ outputDir, themes: { Bad: { background: 'red' } } })).toThrow(
      /six-digit hex/,
    );
  });

  it('says how to get pptxgenjs when it is missing', async () => {
    const missing = loadPptxGenJS(() => import('pptxgenjs-is-not-installed' as string) as never);
    await expect(missing).rejects.toThrow(ConfigurationError);
    await expect(missing).rejects.toThrow('install pptxgenjs to use PPT');
    expect(typeof (await loadPptxGenJS())).toBe('function');
  });
});

describe('PPT (sync)', () => {
  it('builds a presentation through the bridge, one per session', () => {
    const ppt = new PPT({ outputDir, imageDirs: [imageDir] });
    try {
      expect(ppt.name).toBe('PPT');
      expect(ppt.call({ theme: 'Default', abs_location: 'sync.pptx' }, 'create_file').state).toBe(
        ActionStatusCode.SUCCESS,
      );
      ppt.call({ title: 'Sync deck', subtitle: 'blocking calls' }, 'add_first_page');
      ppt.call({ title: 'Chart', bullet_items: 'a[SPAN]b', image: 'chart.png' }, 'add_text_image_page');
      const other = ppt.call({}, 'submit_file', { sessionId: 'other' });
      expect(other.errmsg).toMatch(/create_file first/);
      const saved = ppt.call({}, 'submit_file');
      expect(saved.formatResult()).toContain(join(outputDir, 'sync.pptx'));
      const file = join(outputDir, 'sync.pptx');
      expect(slideTexts(file, 1)).toEqual(['Sync deck', 'blocking calls']);
      expect(slideTexts(file, 2)).toEqual(['Chart', 'a', 'b']);
      expect(ppt.call({ theme: 'Default', abs_location: '../x' }, 'create_file').state).toBe(
        ActionStatusCode.API_ERROR,
      );
    } finally {
      ppt.close();
    }
  });
});

describe('readImageInfo', () => {
  it('reads the type and size of PNG, GIF and JPEG headers, and nothing else', () => {
    expect(readImageInfo(png(40, 20))).toEqual({ mime: 'image/png', width: 40, height: 20 });
    const gif = Buffer.from([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x2c, 0x01, 0x0a, 0x00]);
    expect(readImageInfo(gif)).toEqual({ mime: 'image/gif', width: 300, height: 10 });
    // SOI, an APP0 segment to skip, then a baseline start-of-frame: precision 8, height 480, width 640.
    const jpeg = Buffer.from([
      0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x01, 0xe0, 0x02, 0x80,
    ]);
    expect(readImageInfo(jpeg)).toEqual({ mime: 'image/jpeg', width: 640, height: 480 });
    expect(readImageInfo(Buffer.from('not an image'))).toBeUndefined();
    expect(readImageInfo(png(40, 20).subarray(0, 12))).toBeUndefined();
  });
});
