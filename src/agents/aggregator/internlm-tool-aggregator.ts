import type { Memory } from '../../memory/memory';
import type { OutputParser } from '../../prompts/output-parser';
import type { ChatMessage } from '../../schema/chat-message';
import { ConfigurationError } from '../../schema/errors';
import { ToolStatusCode } from '../../schema/status';
import { asToolResponse, type ToolResponse } from '../../schema/tool-response';
import { contentToText } from './content';
import { DefaultAggregator, type SystemInstruction } from './default-aggregator';

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
    const begin = this.environmentBegin;
    const end = this.environmentEnd;
    let toolType: string | null = null;
    for (const message of memory.getMemory()) {
      if (message.sender === name) {
        const parsed = asToolResponse(message.formatted);
        if (!parsed) {
          out.push({ role: 'assistant', content: contentToText(message.content) });
          continue;
        }
        if (parsed.status === ToolStatusCode.PARSING_ERROR) continue;
        out.push({ role: 'assistant', content: render(toolParser, parsed, message.content) });
        toolType = parsed.toolType;
      } else if (this.#users.has(message.sender)) {
        out.push({ role: 'user', content: contentToText(message.content) });
      } else {
        const result: ChatMessage = {
          role: this.environmentRole,
          content: begin + contentToText(message.content) + end,
        };
        if (toolType) result.name = toolType;
        out.push(result);
      }
    }
    return out;
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
