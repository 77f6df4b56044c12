import { readFileSync } from 'node:fs';
import { lstat, mkdir, readFile, realpath, stat, writeFile } from 'node:fs/promises';
import { dirname, extname, isAbsolute, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import { AsyncBaseAction } from '../../actions/base-action';
import type { ToolContext } from '../../actions/types';
import { ActionReturn } from '../../schema/action-return';
import { ConfigurationError, missingPeer } from '../../schema/errors';
import { ActionStatusCode } from '../../schema/status';
import { BridgedTool } from '../bridged-tool';
import { readImageInfo } from './image-info';

/** The slide sizes a theme can use (pptxgenjs's built-in layouts). */
export type PPTLayout = 'LAYOUT_16x9' | 'LAYOUT_16x10' | 'LAYOUT_4x3' | 'LAYOUT_WIDE';

/**
 * How a theme looks. Colours are six-digit hex (`'1F2937'`, no `#`). Every slide of a theme shares its
 * background and fonts; the three page kinds are Lagent's layouts (title slide, title and content, two
 * contents).
 */
export interface PPTTheme {
  /** @default 'LAYOUT_16x9' */
  layout?: PPTLayout | undefined;
  /** Background colour. @default 'FFFFFF' */
  background?: string | undefined;
  /** The path of a background picture (PNG, JPEG or GIF) for every slide; read when the tool is built. */
  backgroundImage?: string | undefined;
  /** @default '1F2937' */
  titleColor?: string | undefined;
  /** @default '374151' */
  textColor?: string | undefined;
  /** The colour of the rule under each page title. @default '2563EB' */
  accentColor?: string | undefined;
  /** @default 'Calibri' */
  titleFont?: string | undefined;
  /** @default 'Calibri' */
  bodyFont?: string | undefined;
}

/** Options of {@link AsyncPPT} and {@link PPT}. */
export interface PPTOptions {
  /**
   * Where presentations are written. File names the model gives are taken relative to it; a name that
   * leaves it (an absolute path elsewhere, `..`) is refused.
   */
  outputDir: string;
  /** Themes by name, added to (or replacing) the built-in `Default`. */
  themes?: Readonly<Record<string, PPTTheme>> | undefined;
  /**
   * Folders images may be read from (e.g. an interpreter's working directory); a relative image path is
   * taken relative to the first. @default [outputDir]
   */
  imageDirs?: readonly string[] | undefined;
  /** The largest image a page may embed, in bytes. @default 20 MiB */
  maxImageBytes?: number | undefined;
  /** @default 'PPT' */
  name?: string | undefined;
  /** @default a sentence saying what the tool does */
  description?: string | undefined;
}

const DEFAULT_DESCRIPTION = 'Creates PowerPoint slides with titles, bullet points and images.';
/** A theme with every look decided. */
interface ResolvedTheme {
  layout: PPTLayout;
  background: string;
  /** The background picture, as pptxgenjs's `data` string. */
  backgroundImage?: string | undefined;
  titleColor: string;
  textColor: string;
  accentColor: string;
  titleFont: string;
  bodyFont: string;
}

const DEFAULT_THEME: ResolvedTheme = {
  layout: 'LAYOUT_16x9',
  background: 'FFFFFF',
  titleColor: '1F2937',
  textColor: '374151',
  accentColor: '2563EB',
  titleFont: 'Calibri',
  bodyFont: 'Calibri',
};
const LAYOUT_SIZES: Record<PPTLayout, { width: number; height: number }> = {
  LAYOUT_16x9: { width: 10, height: 5.625 },
  LAYOUT_16x10: { width: 10, height: 6.25 },
  LAYOUT_4x3: { width: 10, height: 7.5 },
  LAYOUT_WIDE: { width: 13.33, height: 7.5 },
};
const HEX_COLOR = /^[0-9A-Fa-f]{6}$/;
const MARGIN = 0.5;
const SPAN = '[SPAN]';

type PptxGenJSClass = typeof import('pptxgenjs').default;
type Presentation = InstanceType<PptxGenJSClass>;

/**
 * Loads pptxgenjs, an optional peer; its absence is a `ConfigurationError` saying how to get it.
 * @internal `importer` exists for tests.
 */
export async function loadPptxGenJS(
  importer: () => Promise<{ default: PptxGenJSClass }> = () => import('pptxgenjs'),
): Promise<PptxGenJSClass> {
  try {
    return (await importer()).default;
  } catch (cause) {
    throw missingPeer(['pptxgenjs'], 'PPT', cause);
  }
}

/** One session's presentation in progress. */
interface Deck {
  presentation: Presentation;
  file: string;
  theme: ResolvedTheme;
  pages: number;
}

const createFileParameters = z.object({
  theme: z.string().describe("The theme to use; 'Default' is always available"),
  abs_location: z
    .string()
    .describe('The file name of the presentation, e.g. report.pptx, saved in the output directory'),
});
const firstPageParameters = z.object({
  title: z.string().describe('The title of the presentation'),
  subtitle: z.string().describe('The subtitle of the presentation (may be empty)'),
});
const textPageParameters = z.object({
  title: z.string().describe('The title of the page'),
  bullet_items: z.string().describe('The bullet points, separated by [SPAN] when there are several'),
});
const textImagePageParameters = textPageParameters.extend({
  image: z.string().describe('The path of a PNG, JPEG or GIF image'),
});

function failure(message: string): ActionReturn {
  return new ActionReturn({ errmsg: message, state: ActionStatusCode.API_ERROR });
}

function isInside(folder: string, path: string): boolean {
  const part = relative(folder, path);
  return part === '' || (!part.startsWith(`..${sep}`) && part !== '..' && !isAbsolute(part));
}

/** The options with `outputDir` made absolute (here, not in the bridge's worker); refuses a missing one. */
function checkedOptions(options: PPTOptions): PPTOptions {
  if (typeof options?.outputDir !== 'string' || options.outputDir === '') {
    throw new ConfigurationError({ message: 'PPT needs outputDir, the folder presentations are written to' });
  }
  return { ...options, outputDir: resolve(options.outputDir) };
}

/** A theme with its defaults filled in and its background picture read; refuses what cannot work. */
function resolveTheme(name: string, theme: PPTTheme): ResolvedTheme {
  const layout = theme.layout ?? DEFAULT_THEME.layout;
  if (!(layout in LAYOUT_SIZES)) {
    throw new ConfigurationError({
      message: `PPT theme "${name}": layout must be one of ${Object.keys(LAYOUT_SIZES).join(', ')}, got ${JSON.stringify(layout)}`,
    });
  }
  return {
    layout,
    background: checkColor(theme.background ?? DEFAULT_THEME.background, 'background', name),
    ...(theme.backgroundImage === undefined
      ? {}
      : { backgroundImage: readBackground(name, theme.backgroundImage) }),
    titleColor: checkColor(theme.titleColor ?? DEFAULT_THEME.titleColor, 'titleColor', name),
    textColor: checkColor(theme.textColor ?? DEFAULT_THEME.textColor, 'textColor', name),
    accentColor: checkColor(theme.accentColor ?? DEFAULT_THEME.accentColor, 'accentColor', name),
    titleFont: theme.titleFont ?? DEFAULT_THEME.titleFont,
    bodyFont: theme.bodyFont ?? DEFAULT_THEME.bodyFont,
  };
}

function readBackground(theme: string, path: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(resolve(path));
  } catch (cause) {
    throw new ConfigurationError({
      message: `PPT theme "${theme}": cannot read backgroundImage ${path}`,
      cause,
    });
  }
  const image = readImageInfo(bytes);
  if (!image) {
    throw new ConfigurationError({
      message: `PPT theme "${theme}": backgroundImage ${path} is not a PNG, JPEG or GIF`,
    });
  }
  return `${image.mime};base64,${bytes.toString('base64')}`;
}

function checkColor(value: string, field: string, theme: string): string {
  if (!HEX_COLOR.test(value)) {
    throw new ConfigurationError({
      message: `PPT theme "${theme}": ${field} must be a six-digit hex colour such as '1F2937', got ${JSON.stringify(value)}`,
    });
  }
  return value.toUpperCase();
}

/**
 * Lagent's PPT toolkit: builds a real `.pptx` one page at a time, one presentation per session. The model
 * calls `create_file`, then pages (`add_first_page`, `add_text_page`, `add_text_image_page`), then
 * `submit_file`, which writes the file into `outputDir`. Needs the optional peer `pptxgenjs`.
 *
 * Mistakes (a page before `create_file`, an unknown theme or image, a file name outside `outputDir`) come
 * back as an `API_ERROR` whose message says what to do instead.
 *
 * @example
 * const ppt = new AsyncPPT({ outputDir: '/srv/slides' });
 * await ppt.call({ theme: 'Default', abs_location: 'intro.pptx' }, 'create_file');
 * await ppt.call({ title: 'Lagent', subtitle: 'agents in TypeScript' }, 'add_first_page');
 * (await ppt.call({}, 'submit_file')).formatResult(); // '{"status":"submitted. view ppt at /srv/slides/intro.pptx"}'
 */
export class AsyncPPT extends AsyncBaseAction {
  static override toolApis = {
    create_file: {
      description: 'Starts a new presentation with a theme; call it before adding pages.',
      parameters: createFileParameters,
    },
    add_first_page: {
      description: 'Adds the title page: the title of the presentation and a subtitle.',
      parameters: firstPageParameters,
    },
    add_text_page: {
      description: 'Adds a page with a title and bullet points.',
      parameters: textPageParameters,
    },
    add_text_image_page: {
      description: 'Adds a page with a title, bullet points on the left and one image on the right.',
      parameters: textImagePageParameters,
    },
    submit_file: {
      description: 'Saves the presentation. When every page is added you must call submit_file.',
      parameters: z.object({}),
    },
  };

  readonly #outputDir: string;
  readonly #themes: Map<string, ResolvedTheme>;
  readonly #imageDirs: string[];
  readonly #maxImageBytes: number;
  readonly #decks = new Map<string, Deck>();

  constructor(options: PPTOptions) {
    super({ name: options?.name ?? 'PPT', description: options?.description ?? DEFAULT_DESCRIPTION });
    this.#outputDir = checkedOptions(options).outputDir;
    this.#themes = new Map();
    for (const [name, theme] of Object.entries({ Default: {}, ...options.themes })) {
      this.#themes.set(name, resolveTheme(name, theme));
    }
    this.#imageDirs = (options.imageDirs ?? [this.#outputDir]).map((folder) => resolve(folder));
    this.#maxImageBytes = options.maxImageBytes ?? 20 * 1024 * 1024;
  }

  /** The folder presentations are written to (absolute). */
  get outputDir(): string {
    return this.#outputDir;
  }

  async create_file(
    { theme, abs_location }: z.output<typeof createFileParameters>,
    context: ToolContext,
  ): Promise<ActionReturn | { status: string }> {
    const declared = this.#themes.get(theme);
    if (!declared) {
      return failure(`There is no theme "${theme}"; use one of: ${[...this.#themes.keys()].join(', ')}.`);
    }
    const file = this.#outputFile(abs_location);
    if (typeof file !== 'string') return file;
    const PptxGenJS = await loadPptxGenJS();
    const presentation = new PptxGenJS();
    presentation.layout = declared.layout;
    this.#defineMasters(presentation, declared);
    this.#decks.set(String(context.sessionId), { presentation, file, theme: declared, pages: 0 });
    return { status: 'created a ppt file.' };
  }

  add_first_page(
    { title, subtitle }: z.output<typeof firstPageParameters>,
    context: ToolContext,
  ): ActionReturn | { status: string } {
    const deck = this.#deck(context);
    if (!deck) return this.#noDeck();
    const slide = deck.presentation.addSlide({ masterName: 'Title Slide' });
    deck.presentation.title = title;
    slide.addText(title, { placeholder: 'title' });
    if (subtitle) slide.addText(subtitle, { placeholder: 'subtitle' });
    deck.pages += 1;
    return { status: 'added page' };
  }

  add_text_page(
    { title, bullet_items }: z.output<typeof textPageParameters>,
    context: ToolContext,
  ): ActionReturn | { status: string } {
    const deck = this.#deck(context);
    if (!deck) return this.#noDeck();
    const slide = deck.presentation.addSlide({ masterName: 'Title and Content' });
    slide.addText(title, { placeholder: 'title' });
    slide.addText(bullets(bullet_items), { placeholder: 'body' });
    deck.pages += 1;
    return { status: 'added page' };
  }

  async add_text_image_page(
    { title, bullet_items, image }: z.output<typeof textImagePageParameters>,
    context: ToolContext,
  ): Promise<ActionReturn | { status: string }> {
    const deck = this.#deck(context);
    if (!deck) return this.#noDeck();
    const path = this.#imagePath(image);
    if (typeof path !== 'string') return path;
    const picture = await this.#readImage(path);
    if (picture instanceof ActionReturn) return picture;
    // Checked again: the session may have started a new file while the image was read.
    const current = this.#deck(context);
    if (!current) return this.#noDeck();
    const slide = current.presentation.addSlide({ masterName: 'Two Content' });
    slide.addText(title, { placeholder: 'title' });
    slide.addText(bullets(bullet_items), { placeholder: 'left' });
    const box = contentBoxes(current.theme.layout).right;
    // Lagent fills the box's width and centres the picture vertically; a tall picture is fitted by height.
    const scale = Math.min(box.w / picture.width, box.h / picture.height);
    const w = picture.width * scale;
    const h = picture.height * scale;
    slide.addImage({ data: picture.data, x: box.x + (box.w - w) / 2, y: box.y + (box.h - h) / 2, w, h });
    current.pages += 1;
    return { status: 'added page' };
  }

  async submit_file(
    _args: Record<string, never>,
    context: ToolContext,
  ): Promise<ActionReturn | { status: string }> {
    const deck = this.#deck(context);
    if (!deck) return this.#noDeck();
    if (deck.pages === 0)
      return failure('The presentation has no pages yet; add at least one page before submit_file.');
    const folder = dirname(deck.file);
    try {
      await mkdir(folder, { recursive: true });
      // A symbolic link inside outputDir must not lead the file out of it.
      const [realRoot, realFolder] = await Promise.all([realpath(this.#outputDir), realpath(folder)]);
      if (!isInside(realRoot, realFolder))
        return failure(`Cannot save ${deck.file}: its folder leads outside the output directory.`);
      const existing = await lstat(deck.file).catch(() => undefined);
      if (existing && !existing.isFile())
        return failure(`Cannot save ${deck.file}: something other than a file is there.`);
      const content = (await deck.presentation.write({
        outputType: 'nodebuffer',
        compression: true,
      })) as Uint8Array;
      await writeFile(deck.file, content);
    } catch (error) {
      return failure(`Could not save ${deck.file}: ${(error as Error).message}.`);
    }
    return { status: `submitted. view ppt at ${deck.file}` };
  }

  /** Forgets every session's presentation; idempotent. */
  close(): void {
    this.#decks.clear();
  }

  #deck(context: ToolContext): Deck | undefined {
    return this.#decks.get(String(context.sessionId));
  }

  #noDeck(): ActionReturn {
    return failure(`No presentation is open in this session; call ${this.name}.create_file first.`);
  }

  #outputFile(name: string): string | ActionReturn {
    const trimmed = name.trim();
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
    if (trimmed === '' || /[\u0000-\u001f]/.test(trimmed)) {
      return failure('Give the presentation a file name, such as report.pptx.');
    }
    const withExtension = extname(trimmed).toLowerCase() === '.pptx' ? trimmed : `${trimmed}.pptx`;
    const file = resolve(this.#outputDir, withExtension);
    if (!isInside(this.#outputDir, file) || file === this.#outputDir) {
      return failure(
        `${JSON.stringify(name)} is outside the output directory ${this.#outputDir}; give a file name inside it, such as report.pptx.`,
      );
    }
    return file;
  }

  #imagePath(image: string): string | ActionReturn {
    const path = resolve(this.#imageDirs[0] ?? this.#outputDir, image.trim());
    if (!this.#imageDirs.some((folder) => isInside(folder, path))) {
      return failure(
        `The image ${JSON.stringify(image)} is outside the folders images may come from (${this.#imageDirs.join(', ')}).`,
      );
    }
    return path;
  }

  /** The image as pptxgenjs's `data` string with its pixel size, or a failure naming the problem. */
  async #readImage(path: string): Promise<ActionReturn | { data: string; width: number; height: number }> {
    let bytes: Uint8Array;
    try {
      const real = await realpath(path);
      if (!(await this.#insideImageDirs(real))) {
        return failure(`The image ${path} leads outside the folders images may come from.`);
      }
      const info = await stat(real);
      if (!info.isFile()) return failure(`The image ${path} is not a file.`);
      if (info.size > this.#maxImageBytes) {
        return failure(`The image ${path} is larger than ${this.#maxImageBytes} bytes; use a smaller one.`);
      }
      bytes = await readFile(real);
    } catch {
      return failure(`There is no image at ${path}; give the path of an existing PNG, JPEG or GIF file.`);
    }
    const image = readImageInfo(bytes);
    if (!image) return failure(`${path} is not a PNG, JPEG or GIF image.`);
    return {
      data: `${image.mime};base64,${Buffer.from(bytes).toString('base64')}`,
      width: image.width,
      height: image.height,
    };
  }

  async #insideImageDirs(real: string): Promise<boolean> {
    for (const folder of this.#imageDirs) {
      const realFolder = await realpath(folder).catch(() => undefined);
      if (realFolder !== undefined && isInside(realFolder, real)) return true;
    }
    return false;
  }

  /** Lagent's three layouts as slide masters whose placeholders the pages fill. */
  #defineMasters(presentation: Presentation, theme: ResolvedTheme): void {
    const background =
      theme.backgroundImage === undefined ? { color: theme.background } : { data: theme.backgroundImage };
    const { width, height } = LAYOUT_SIZES[theme.layout];
    const boxes = contentBoxes(theme.layout);
    const title = {
      fontFace: theme.titleFont,
      color: theme.titleColor,
      bold: true,
      fontSize: 30,
      valign: 'middle' as const,
    };
    const body = { fontFace: theme.bodyFont, color: theme.textColor, fontSize: 18, valign: 'top' as const };
    const rule = {
      rect: { x: MARGIN, y: 1.2, w: width - 2 * MARGIN, h: 0.04, fill: { color: theme.accentColor } },
    };
    const pageTitle = {
      placeholder: {
        options: {
          name: 'title',
          type: 'title' as const,
          x: MARGIN,
          y: 0.3,
          w: width - 2 * MARGIN,
          h: 0.85,
          ...title,
        },
      },
    };
    presentation.defineSlideMaster({
      title: 'Title Slide',
      background,
      objects: [
        {
          placeholder: {
            options: {
              name: 'title',
              type: 'title',
              x: MARGIN,
              y: height * 0.28,
              w: width - 2 * MARGIN,
              h: height * 0.22,
              ...title,
              fontSize: 40,
              align: 'center',
            },
          },
        },
        {
          placeholder: {
            options: {
              name: 'subtitle',
              type: 'body',
              x: MARGIN,
              y: height * 0.54,
              w: width - 2 * MARGIN,
              h: height * 0.16,
              ...body,
              fontSize: 22,
              align: 'center',
            },
          },
        },
      ],
    });
    presentation.defineSlideMaster({
      title: 'Title and Content',
      background,
      objects: [
        pageTitle,
        rule,
        { placeholder: { options: { name: 'body', type: 'body', ...boxes.full, ...body } } },
      ],
    });
    presentation.defineSlideMaster({
      title: 'Two Content',
      background,
      objects: [
        pageTitle,
        rule,
        { placeholder: { options: { name: 'left', type: 'body', ...boxes.left, ...body } } },
      ],
    });
  }
}

/** Where a page's content goes, in inches: the full width, or its left and right halves. */
function contentBoxes(layout: PPTLayout) {
  const { width, height } = LAYOUT_SIZES[layout];
  const top = 1.4;
  const h = height - top - MARGIN;
  const gap = 0.3;
  const half = (width - 2 * MARGIN - gap) / 2;
  return {
    full: { x: MARGIN, y: top, w: width - 2 * MARGIN, h },
    left: { x: MARGIN, y: top, w: half, h },
    right: { x: MARGIN + half + gap, y: top, w: half, h },
  };
}

/** Lagent's bullet text: items separated by `[SPAN]`, each trimmed, one paragraph per item. */
function bullets(text: string) {
  const items = text.split(SPAN).map((item) => item.trim());
  return items.map((item, index) => ({
    text: item,
    options: { bullet: true, ...(index < items.length - 1 ? { breakLine: true } : {}) },
  }));
}

/**
 * The sync twin of {@link AsyncPPT}: the same APIs and results, the presentation kept in the sync bridge's
 * worker thread. Call `close()` when done.
 *
 * @example
 * const ppt = new PPT({ outputDir: './slides' });
 * ppt.call({ theme: 'Default', abs_location: 'intro.pptx' }, 'create_file');
 */
export class PPT extends BridgedTool {
  constructor(options: PPTOptions) {
    super({
      exportName: 'AsyncPPT',
      apis: AsyncPPT.toolApis,
      options: { ...checkedOptions(options) },
      callTimeout: 60_000,
      name: options?.name ?? 'PPT',
      description: options?.description ?? DEFAULT_DESCRIPTION,
    });
  }
}
