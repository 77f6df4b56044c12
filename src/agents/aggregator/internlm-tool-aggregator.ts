import { countTokens as estimateTokens } from '../../llms/token-count';
import type { Memory } from '../../memory/memory';
import type { OutputParser } from '../../prompts/output-parser';
import type { AgentMessage } from '../../schema/agent-message';
import type { ChatMessage } from '../../schema/chat-message';
import { ConfigurationError } from '../../schema/errors';
import { ToolStatusCode } from '../../schema/status';
import { asToolResponse, type ToolResponse } from '../../schema/tool-response';
import { contentToText } from './content';
import { DefaultAggregator, type SystemInstruction } from './default-aggregator';
import type { TokenCounter, TokenWindowAggregatorOptions } from './token-window-aggregator';

/** The token window of an {@link InternLMToolAggregator}: the `TokenWindowAggregator`'s, without summaries. */
export type InternLMWindowOptions = Omit<TokenWindowAggregatorOptions, 'summarize'>;

/** Options of {@link InternLMToolAggregator}. */
export interface InternLMToolAggregatorOptions {
  /** The role of tool results. @default 'environment' */
  environmentRole?: string | undefined;
  /** Put before every tool result. @default '' */
  environmentBegin?: string | undefined;
  /** Put after every tool result. @default '' */
  environmentEnd?: string | undefined;
  /** Senders whose messages are user turns. @default ['user'] */
  userNames?: readonly string[] | undefined;
  /**
   * Example dialogs shown after the instructions. Roles: `user`, `assistant`, `system`, the environment
   * role, `thought`/`language` (rendered with the parser; a `thought` followed by a `tool` message
   * `{ role: 'tool', content: action, name: toolType }` becomes one assistant turn with that call).
   */
  fewShot?: readonly (readonly ChatMessage[])[] | undefined;
  /**
   * Sends only the newest history that fits in `maxTokens - reserve` tokens, as `TokenWindowAggregator`
   * does for the default rendering: the instructions and few-shot dialogs always, then the newest turns, a
   * tool call and its results kept or dropped together, the newest turn always. For the InternLM agents,
   * whose tool-heavy histories grow with every call: `new AsyncAgentForInternLM({ llm, interpreter,
   * aggregator: new InternLMToolAggregator({ window: { maxTokens: 8_000, reserve: 1_000, llm } }) })`.
   */
  window?: InternLMWindowOptions | undefined;
}

/** A rendered history message's count, kept with the memory message it came from while its text is the same. */
interface CachedCount {
  content: string;
  tokens: number;
}

const SHOT_ROLES = new Set(['assistant', 'user', 'system', 'thought', 'language', 'tool']);

interface ToolAwareParser extends OutputParser {
  toolType?: string | null | undefined;
}

/**
 * The aggregator for tool-using agents (Lagent's InternLM one): the system instruction, the parser's format
 * instruction (named by its tool type), few-shot dialogs, then the history — the agent's own turns
 * re-rendered from `formatted` with `parser.formatResponse` (turns that failed to parse are left out),
 * user turns, and every other sender's message as a tool result in the environment role, named after the
 * last tool type called. Neither its options nor the memory are ever modified.
 *
 * @example
 * const agent = new Agent({ llm, template: 'Solve with Python.', aggregator: new InternLMToolAggregator(),
 *   outputFormat: new ToolParser({ toolType: 'code interpreter', begin: '```python\n', end: '\n```\n' }) });
 */
export class InternLMToolAggregator extends DefaultAggregator {
  /** The role of tool results. */
  readonly environmentRole: string;
  /** Put before every tool result. */
  readonly environmentBegin: string;
  /** Put after every tool result. */
  readonly environmentEnd: string;
  /** Senders whose messages are user turns (frozen). */
  readonly userNames: readonly string[];
  /** The few-shot dialogs (a frozen copy of what was given). */
  readonly fewShot: readonly (readonly ChatMessage[])[];
  readonly #users: ReadonlySet<string>;
  readonly #shotCache = new WeakMap<object, readonly ChatMessage[]>();
  #plainShots: readonly ChatMessage[] | undefined;
  /** With `window`: the tokens the history may use besides the instructions, and how to count. */
  readonly #window: { budget: number; count: TokenCounter; base: number } | undefined;
  readonly #counts = new WeakMap<AgentMessage, CachedCount>();

  constructor(options: InternLMToolAggregatorOptions = {}) {
    super();
    this.environmentRole = options.environmentRole ?? 'environment';
    this.environmentBegin = options.environmentBegin ?? '';
    this.environmentEnd = options.environmentEnd ?? '';
    this.userNames = Object.freeze([...(options.userNames ?? ['user'])]);
    this.#users = new Set(this.userNames);
    const fewShot = options.fewShot ?? [];
    if (!Array.isArray(fewShot))
      throw new ConfigurationError({ message: 'fewShot must be a list of dialogs' });
    this.fewShot = Object.freeze(
      fewShot.map((shot, i) => {
        if (!Array.isArray(shot))
          throw new ConfigurationError({ message: `fewShot[${i}] must be a list of messages` });
        return Object.freeze(
          shot.map((message, j) => {
            const role = (message as ChatMessage | undefined)?.role;
            if (typeof role !== 'string' || (!SHOT_ROLES.has(role) && role !== this.environmentRole)) {
              throw new ConfigurationError({
                message: `fewShot[${i}][${j}] has unknown role ${JSON.stringify(role)}; use user, assistant, system, ${this.environmentRole}, thought, language or tool`,
              });
            }
            return Object.freeze({ ...message, content: contentToText(message.content) });
          }),
        );
      }),
    );
    this.#window = options.window === undefined ? undefined : windowOf(options.window);
  }

  override aggregate(
    memory: Memory | undefined,
    name: string,
    parser?: OutputParser,
    systemInstruction?: SystemInstruction,
  ): ChatMessage[] {
    const out = this.aggregateSystemInstruction(systemInstruction, parser);
    const toolParser = parser as ToolAwareParser | undefined;
    const instruction = toolParser?.formatInstruction?.();
    if (typeof instruction === 'string') {
      if (instruction) {
        const message: ChatMessage = { role: 'system', content: instruction };
        if (toolParser?.toolType) message.name = toolParser.toolType;
        out.push(message);
      }
    } else if (Array.isArray(instruction)) {
      for (const message of instruction) out.push({ ...message });
    }
    for (const message of this.#shots(toolParser)) out.push({ ...message });
    if (!memory) return out;
    const window = this.#window;
    const system = window === undefined ? 0 : out.length;
    // With a window: where each unit (a turn, or a tool call and the results after it) starts in `out`.
    const units: number[] = [];
    const sources: AgentMessage[] = [];
    const begin = this.environmentBegin;
    const end = this.environmentEnd;
    let toolType: string | null = null;
    let inCall = false;
    for (const message of memory.getMemory()) {
      let rendered: ChatMessage;
      if (message.sender === name) {
        const parsed = asToolResponse(message.formatted);
        if (parsed?.status === ToolStatusCode.PARSING_ERROR) continue;
        rendered = parsed
          ? { role: 'assistant', content: render(toolParser, parsed, message.content) }
          : { role: 'assistant', content: contentToText(message.content) };
        if (parsed) toolType = parsed.toolType;
        units.push(out.length);
        inCall = true;
      } else if (this.#users.has(message.sender)) {
        rendered = { role: 'user', content: contentToText(message.content) };
        units.push(out.length);
        inCall = false;
      } else {
        rendered = { role: this.environmentRole, content: begin + contentToText(message.content) + end };
        if (toolType) rendered.name = toolType;
        // A result belongs to the call before it; one without a call is a unit of its own.
        if (!inCall) units.push(out.length);
      }
      out.push(rendered);
      if (window !== undefined) sources.push(message);
    }
    return window === undefined ? out : this.#windowed(out, system, units, sources, window);
  }

  /** `out` with only the newest units of its history (from `system` on) that fit in the window. */
  #windowed(
    out: ChatMessage[],
    system: number,
    units: readonly number[],
    sources: readonly AgentMessage[],
    window: { budget: number; count: TokenCounter; base: number },
  ): ChatMessage[] {
    let left = window.budget - window.base;
    for (let i = 0; i < system; i++) left -= window.count([out[i]!]) - window.base;
    let end = out.length;
    let start = end;
    for (let u = units.length - 1; u >= 0; u--) {
      const from = units[u]!;
      let tokens = 0;
      for (let i = from; i < end; i++) tokens += this.#tokens(out[i]!, sources[i - system]!, window);
      if (tokens > left && end !== out.length) break;
      left -= tokens;
      start = from;
      end = from;
    }
    if (start === system) return out;
    return [...out.slice(0, system), ...out.slice(start)];
  }

  /** A rendered history message's tokens, counted once per memory message (while it renders the same). */
  #tokens(message: ChatMessage, source: AgentMessage, window: { count: TokenCounter; base: number }): number {
    const content = message.content ?? '';
    const cached = this.#counts.get(source);
    if (cached !== undefined && cached.content === content) return cached.tokens;
    const tokens = window.count([message]) - window.base;
    this.#counts.set(source, { content, tokens });
    return tokens;
  }

  /** The few-shot dialogs rendered for a parser, once per parser (and never modified afterwards). */
  #shots(parser: ToolAwareParser | undefined): readonly ChatMessage[] {
    if (this.fewShot.length === 0) return [];
    if (!parser) {
      this.#plainShots ??= this.#renderShots(undefined);
      return this.#plainShots;
    }
    let shots = this.#shotCache.get(parser);
    if (!shots) {
      shots = this.#renderShots(parser);
      this.#shotCache.set(parser, shots);
    }
    return shots;
  }

  #renderShots(parser: ToolAwareParser | undefined): readonly ChatMessage[] {
    const out: ChatMessage[] = [];
    const { environmentBegin: begin, environmentEnd: end } = this;
    for (const shot of this.fewShot) {
      for (let i = 0; i < shot.length; i++) {
        const message = shot[i]!;
        if (message.role === this.environmentRole) {
          let content = message.content ?? '';
          if (!content.startsWith(begin)) content = begin + content;
          if (!content.endsWith(end)) content += end;
          out.push({ ...message, content });
        } else if (message.role === 'thought' || message.role === 'language') {
          const next = shot[i + 1];
          const response: ToolResponse =
            next?.role === 'tool'
              ? {
                  toolType: next.name ?? null,
                  thought: message.content ?? '',
                  action: next.content,
                  status: ToolStatusCode.VALID_TOOL,
                }
              : {
                  toolType: null,
                  thought: message.content ?? '',
                  action: null,
                  status: ToolStatusCode.NO_TOOL,
                };
          if (next?.role === 'tool') i++;
          out.push({ role: 'assistant', content: render(parser, response, message.content ?? '') });
        } else if (message.role === 'tool') {
          out.push({
            role: 'assistant',
            content: render(
              parser,
              {
                toolType: message.name ?? null,
                thought: '',
                action: message.content,
                status: ToolStatusCode.VALID_TOOL,
              },
              message.content,
            ),
          });
        } else out.push({ ...message });
      }
    }
    return Object.freeze(out.map((message) => Object.freeze(message)));
  }
}

/** The window's budget and counter, checked as `TokenWindowAggregator` checks them. */
function windowOf(options: InternLMWindowOptions): { budget: number; count: TokenCounter; base: number } {
  const { maxTokens, reserve = 0, llm } = options ?? ({} as InternLMWindowOptions);
  if (!Number.isInteger(maxTokens) || maxTokens <= 0) {
    throw new ConfigurationError({
      message: `InternLMToolAggregator: window.maxTokens must be a positive integer, got ${String(maxTokens)}`,
    });
  }
  if (!Number.isInteger(reserve) || reserve < 0 || reserve >= maxTokens) {
    throw new ConfigurationError({
      message: `InternLMToolAggregator: window.reserve must be an integer from 0 to maxTokens - 1, got ${String(reserve)}`,
    });
  }
  if (llm !== undefined && typeof llm?.countTokens !== 'function') {
    throw new ConfigurationError({ message: 'InternLMToolAggregator: window.llm must have countTokens()' });
  }
  const count: TokenCounter =
    options.countTokens ?? (llm ? (input) => llm.countTokens(input) : (input) => estimateTokens(input));
  return { budget: maxTokens - reserve, count, base: count([]) };
}

/** A parsed turn as text with the parser, falling back to the raw content if the parser cannot render it. */
function render(parser: OutputParser | undefined, parsed: ToolResponse, content: unknown): string {
  if (parser?.formatResponse) {
    try {
      return parser.formatResponse(parsed);
    } catch {
      // A turn parsed by a different parser than this one: the model's own text is the faithful fallback.
    }
  }
  return contentToText(content);
}
