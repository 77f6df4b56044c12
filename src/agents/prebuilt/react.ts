import { ActionExecutor } from '../../actions/action-executor';
import { AsyncActionExecutor } from '../../actions/async-action-executor';
import type { ActionBase, BaseAction } from '../../actions/base-action';
import type { ExecutorBase } from '../../actions/executor-base';
import { currentFrame } from '../../core/call-context';
import { driveAsync, driveSync, type Steps } from '../../core/steps';
import { ActionPreprocessor } from '../../hooks/action-preprocessor';
import type { AsyncHook, Hook, SyncHook } from '../../hooks/hook';
import type { AsyncBaseLLM, BaseLLM } from '../../llms/base-llm';
import type { OutputParser } from '../../prompts/output-parser';
import { PromptTemplate } from '../../prompts/prompt-template';
import type { AgentMessage } from '../../schema/agent-message';
import type { ChatMessage, ToolCall } from '../../schema/chat-message';
import { ValidationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import { isPlainObject } from '../../utils/is';
import { pythonJSON } from '../../utils/text';
import { Agent } from '../agent';
import type {
  AgentBase,
  AgentOptions,
  AsyncForwardOptions,
  ForwardOptions,
  MemoryConfig,
} from '../agent-base';
import type { AgentClass } from '../agent-class';
import type { DefaultAggregator } from '../aggregator/default-aggregator';
import { AsyncAgent } from '../async-agent';
import type { RoundKind } from '../interceptors/approvals/rounds';
import { resumesFromMemory } from '../interceptors/durable/in-process';
import type { DurableOptions } from '../interceptors/durable/journal';
import { RESUME } from '../interceptors/slots';
import type { InterceptorFor } from '../interceptors/types';
import { emitEvent } from '../lifecycle';
import { TOOL_TURNS, WAITING_CALLS, type WaitingCalls } from '../pending-interrupts';
import { asciiPythonJSON, type CompatMode, checkCompat } from './compat';
import type { PromptLanguage } from './internlm-prompts';
import { LAGENT_REACT_TEMPLATE } from './lagent-prompts';
import {
  builtinTurn,
  checkMaxTurn,
  type LoopAgent,
  type LoopExecutor,
  maxTurnReply,
  subCall,
} from './loop-turns';
import {
  isReActParseFailure,
  lagentReActOutputFormat,
  ReActOutputParser,
  type ReActParseFailure,
  type ReActStep,
  reactOutputFormat,
} from './react-output-format';
import { REACT_PROMPTS } from './react-prompts';
import {
  editedAnswer,
  lastMessageOf,
  planTextCall,
  stoppedUnanswered,
  type TextCall,
  textCallId,
} from './text-approval';

/** Options of {@link ReAct} and {@link AsyncReAct}: `L` the model, `A` the tools, `F` the parsed step, `H` the hooks. */
export interface ReActOptions<L, A extends ActionBase, F, H extends Hook> {
  /** The model of the select agent. */
  llm: L;
  /** The tools the model may call. */
  actions: A | readonly A[];
  /**
   * The select agent's system instruction; `{action_info}` receives the tools' descriptions (JSON) and
   * `{output_format}` the output format's instruction. Formatted once, when the agent is built.
   * @default the prompt of `language` (REACT_PROMPTS)
   */
  template?: string | PromptTemplate | undefined;
  /** Reads each model reply. Output it cannot read becomes a `NoAction` turn. @default reactOutputFormat(language) */
  outputFormat?: OutputParser<F> | undefined;
  /** The language of the default prompts. @default 'zh' (Lagent's) */
  language?: PromptLanguage | undefined;
  /**
   * `'lagent'`: the system prompt is built as Python Lagent's ReAct builds it, character for character:
   * Lagent's texts (`LAGENT_REACT_TEMPLATE`, `lagentReActOutputFormat()`; Chinese only) and the tool list
   * as `json.dumps` writes it (non-ASCII as `\uXXXX` escapes). A `template` or `outputFormat` you pass is
   * still used; the tool list is written Lagent's way either way.
   */
  compat?: CompatMode | undefined;
  /** The most model turns per call. @default 5 */
  maxTurn?: number | undefined;
  /**
   * Whether a model reply is the answer. @default a `formatted` with a `conclusion` field; with
   * `compat: 'lagent'`, Lagent's: also the word `conclusion` anywhere in the model's text
   */
  finishCondition?: ((message: AgentMessage) => boolean) | undefined;
  /** The select agent's memory. @default {} */
  memory?: MemoryConfig | undefined;
  /** The select agent's aggregator. @default new DefaultAggregator() */
  aggregator?: DefaultAggregator | undefined;
  /** The executor's hooks. @default [new ActionPreprocessor()] */
  actionHooks?: readonly H[] | undefined;
  /** Hooks of the ReAct agent itself. */
  hooks?: H[] | undefined;
  /** Interceptors of this agent (see `AsyncInterceptor`): they apply to its calls and every call made inside. */
  interceptors?: readonly InterceptorFor<H>[] | undefined;
  /** @default the class name */
  name?: string | undefined;
  description?: string | undefined;
  /** Journals each call's model and tool steps in a store, so a crashed or paused call goes on where it was. */
  durable?: DurableOptions | undefined;
}

/** The default finish condition: the reply's `formatted` has a `conclusion`. */
export function hasConclusion(message: AgentMessage): boolean {
  return isPlainObject(message.formatted) && 'conclusion' in message.formatted;
}

/**
 * Lagent's finish condition (`'conclusion' in m.content or 'conclusion' in m.formatted`), the default with
 * `compat: 'lagent'`: the word anywhere in the model's text ends the loop too, even in a step's thought. A
 * reply the format could not read goes on as a `NoAction` turn (Lagent's parser would have raised).
 */
function lagentFinish(message: AgentMessage): boolean {
  if (isReActParseFailure(message.formatted)) return false;
  return (
    (typeof message.content === 'string' && message.content.includes('conclusion')) || hasConclusion(message)
  );
}

/** What the ReAct loop needs of its agent. */
interface ReActLoop {
  readonly name: string;
  readonly selectAgent: LoopAgent;
  readonly actions: LoopExecutor;
  readonly maxTurn: number;
  readonly finishCondition: (message: AgentMessage) => boolean;
}

/** The text of an output format's instruction (system messages joined). */
function instructionText(instruction: string | ChatMessage[]): string {
  if (typeof instruction === 'string') return instruction;
  return instruction.map((message) => message.content ?? '').join('\n');
}

/** The select agent's system instruction: the template with the tools and the formats filled in. */
function selectInstruction(
  template: string | PromptTemplate,
  executor: ExecutorBase<ActionBase>,
  parser: OutputParser<unknown>,
  lagent: boolean,
): string {
  const prompt = typeof template === 'string' ? new PromptTemplate(template) : template;
  const description = executor.description();
  const values: Record<string, string> = {
    action_info: lagent ? asciiPythonJSON(description) : pythonJSON(description),
    output_format: instructionText(parser.formatInstruction?.() ?? ''),
  };
  const used: Record<string, string> = {};
  for (const name of prompt.missingVariables) if (name in values) used[name] = values[name]!;
  return prompt.format(used);
}

/** The executor's input for a tool step: the `action` of a Lagent-format step is the call. */
function toCall(reply: AgentMessage): AgentMessage {
  const formatted = reply.formatted;
  if (!isPlainObject(formatted) || !isPlainObject(formatted.action)) return reply;
  if (typeof formatted.action.name !== 'string') return reply;
  const call = reply.clone();
  call.formatted = formatted.action;
  return call;
}

/** The call a model reply makes: its `action` (or a `{ name, parameters }` step), else null. */
function actionOf(reply: AgentMessage): TextCall | null {
  const formatted = reply.formatted;
  if (!isPlainObject(formatted)) return null;
  const action = 'action' in formatted ? formatted.action : formatted;
  if (!isPlainObject(action) || typeof action.name !== 'string') return null;
  return { name: action.name, parameters: action.parameters ?? {} };
}

/**
 * The model's reply whose call waits for a decision: the select agent's last message when it is a call
 * the loop never answered (the loop's previous call stopped before running it).
 */
function pendingStep(owner: ReActLoop, sessionId: SessionId, inputs: number): AgentMessage | undefined {
  const last = lastMessageOf(owner.selectAgent, sessionId);
  if (last === undefined || actionOf(last) === null || isReActParseFailure(last.formatted)) return undefined;
  if (owner.finishCondition(last)) return undefined;
  return stoppedUnanswered(owner as unknown as AgentBase, sessionId, inputs) ? last : undefined;
}

/**
 * A tool step: the call checked for approval (see `text-approval.ts`), then run by the executor, or
 * answered with the user's refusal. Undefined when a new message supersedes a call that needs no decision.
 */
function* actionTurn(
  owner: ReActLoop,
  reply: AgentMessage,
  sessionId: SessionId,
  round: RoundKind,
): Steps<AgentMessage | undefined> {
  const action = actionOf(reply);
  let message: AgentMessage = toCall(reply);
  if (action !== null) {
    const call: ToolCall = {
      id: textCallId(owner.selectAgent, sessionId),
      name: action.name,
      arguments: action.parameters as ToolCall['arguments'],
    };
    const plan = yield* planTextCall(
      owner as unknown as AgentBase,
      owner.actions,
      reply,
      call,
      message,
      sessionId,
      round,
    );
    if (plan === undefined) return undefined;
    if (!plan.run) return plan.answer;
    message = plan.message;
    // The tool call as the function-calling loop reports it, for listeners (and `lagent ui`).
    const agent = owner as unknown as AgentBase;
    const toolCalls = [plan.edited ?? call];
    emitEvent(agent, 'toolStart', { agent, sessionId, toolCalls, path: '' });
    let result: AgentMessage = yield* subCall(owner.actions.call(message, { sessionId }));
    if (plan.edited !== undefined) result = editedAnswer(result, plan.edited);
    emitEvent(agent, 'toolEnd', { agent, sessionId, toolCalls, message: result, path: '' });
    return result;
  }
  return yield* subCall(owner.actions.call(message, { sessionId }));
}

/** The ReAct loop, written once for the sync and async agents. */
function* reactSteps(
  owner: ReActLoop,
  messages: AgentMessage[],
  options: ForwardOptions,
): Steps<AgentMessage> {
  const { sessionId } = options;
  let input: AgentMessage | AgentMessage[] = messages;
  let last: AgentMessage | undefined;
  const frame = currentFrame();
  const pending = pendingStep(owner, sessionId, messages.length);
  if (pending !== undefined) {
    // The session waits for a decision on this call: given it, the call runs (or is answered with the
    // refusal); given another message, a call that needed approval is declined and the loop goes on.
    const answer = yield* actionTurn(
      owner,
      pending,
      sessionId,
      frame?.find(RESUME) !== undefined ? 'resumed' : 'superseded',
    );
    if (answer !== undefined) input = messages.length === 0 ? answer : [answer, ...messages];
  } else if (frame?.owner === owner && frame.get(RESUME) !== undefined && messages.length === 0) {
    throw new ValidationError({
      message: `${owner.name}: session ${JSON.stringify(String(sessionId))} has no call waiting for a decision`,
      field: 'decisions',
    });
  }
  for (let turn = 0; turn < owner.maxTurn; turn++) {
    const reply: AgentMessage = yield* subCall(owner.selectAgent.call(input as AgentMessage, options));
    if (owner.finishCondition(reply)) return reply;
    const formatted: unknown = reply.formatted;
    if (isReActParseFailure(formatted)) {
      const errMsg: string = `Your reply could not be read (${formatted.parseError}). Reply with one JSON object in one of the formats given.`;
      last = yield* builtinTurn(owner.actions, owner.actions.noAction.name, { errMsg }, sessionId);
    } else {
      last = (yield* actionTurn(owner, reply, sessionId, 'live'))!;
    }
    input = last;
  }
  return maxTurnReply(owner.name, owner.maxTurn, last!);
}

interface Parts<F> {
  lagent: boolean;
  parser: ReActOutputParser<F>;
  template: string | PromptTemplate;
  maxTurn: number;
  finishCondition: (message: AgentMessage) => boolean;
}

function partsOf<F>(owner: string, options: ReActOptions<unknown, ActionBase, F, Hook>): Parts<F> {
  const lagent = checkCompat(owner, options.compat, options.language, 'zh');
  const language = options.language ?? 'zh';
  const defaultFormat = lagent ? lagentReActOutputFormat() : reactOutputFormat(language);
  const format = (options.outputFormat ?? defaultFormat) as OutputParser<F>;
  return {
    lagent,
    parser: new ReActOutputParser(format),
    template: options.template ?? (lagent ? LAGENT_REACT_TEMPLATE : REACT_PROMPTS[language].template),
    maxTurn: checkMaxTurn(owner, options.maxTurn ?? 5),
    finishCondition: options.finishCondition ?? (lagent ? lagentFinish : hasConclusion),
  };
}

/** What every ReAct variant has; `I` is the select agent's class, `E` the executor's. */
export interface ReActAgentFields<I, E> {
  /** Chooses the next step; its memory holds the tool turns. */
  selectAgent: I;
  /** Runs the tool calls. */
  actions: E;
  /** The most model turns per call. */
  maxTurn: number;
  /** Whether a model reply is the answer. */
  finishCondition: (message: AgentMessage) => boolean;
}

/** What differs between the ReAct variants: the select agent's class and the executor's. */
interface ReActVariant<I, E> {
  selectAgent(options: AgentOptions<unknown, unknown, Hook>): I;
  executor(actions: readonly ActionBase[], hooks: readonly Hook[]): E;
}

/** The ReAct agents' shared fields and constructor over a variant's base class (see {@link AgentClass}). */
function reactAgentClass<A extends AgentBase, I extends AgentBase, E extends ExecutorBase<ActionBase>, O>(
  Base: AgentClass<A>,
  variant: ReActVariant<I, E>,
) {
  abstract class ReActAgent extends (Base as AgentClass<AgentBase>) {
    selectAgent: I;
    actions: E;
    maxTurn: number;
    finishCondition: (message: AgentMessage) => boolean;

    constructor(options: ReActOptions<unknown, ActionBase, unknown, Hook>) {
      super({
        name: options.name,
        description: options.description,
        hooks: options.hooks,
        interceptors: options.interceptors,
        durable: options.durable,
      });
      const parts = partsOf(this.name, options);
      this.actions = variant.executor(
        options.actions as readonly ActionBase[],
        options.actionHooks ?? [new ActionPreprocessor()],
      );
      this.selectAgent = variant.selectAgent({
        llm: options.llm,
        template: selectInstruction(parts.template, this.actions, parts.parser, parts.lagent),
        outputFormat: parts.parser,
        memory: options.memory,
        aggregator: options.aggregator,
      });
      this.maxTurn = parts.maxTurn;
      this.finishCondition = parts.finishCondition;
    }

    /** The call of the select agent's last step when the loop never answered it (see `pendingInterrupts`). */
    [WAITING_CALLS](sessionId: SessionId): WaitingCalls | undefined {
      const owner = this as unknown as ReActLoop;
      const step = pendingStep(owner, sessionId, 0);
      const action = step === undefined ? null : actionOf(step);
      if (action === null) return undefined;
      const id = textCallId(owner.selectAgent, sessionId);
      const call: ToolCall = { id, name: action.name, arguments: action.parameters as ToolCall['arguments'] };
      return { calls: [call], executor: this.actions };
    }

    get [TOOL_TURNS](): AgentBase {
      return this.selectAgent;
    }
  }
  return ReActAgent as unknown as AgentClass<A & ReActAgentFields<I, E>> & {
    new (options: O): A & ReActAgentFields<I, E>;
  };
}

/**
 * Lagent's ReAct: a select agent asks the model for the next step (a tool call or a conclusion, as JSON),
 * an executor runs the call, and the result goes back to the select agent, until the reply has a
 * `conclusion` (or `finishCondition` says so) or `maxTurn` model turns have run — then the reply says it
 * stopped there. Output the format cannot read, and calls of unknown tools, come back to the model as
 * `NoAction` / `InvalidAction` results. The reply is the model's answer; the tool turns are in
 * `selectAgent`'s memory (`stateDict()` keys `memory`, `selectAgent.memory`).
 *
 * A call of a tool with `needsApproval` (or that the executor's `needsApproval` picks) is not run: the call
 * returns an interrupt reply (`interruptsOf`; the call's id is `call_<n>`, the model's step's place in
 * `selectAgent`'s memory). `resumeWith(decisions)` on the session runs it (with edited arguments) or gives
 * the model the refusal as the observation; a new message instead declines it and goes on.
 *
 * @example
 * const agent = new ReAct({ llm, actions: [calculator], language: 'en' });
 * agent.call('What is 3 ** 5?').formatted; // { thought_process: '...', conclusion: '243' }
 */
export class ReAct<F = ReActStep> extends reactAgentClass<
  Agent,
  Agent<unknown>,
  ActionExecutor,
  ReActOptions<BaseLLM, BaseAction, unknown, SyncHook>
>(Agent, {
  selectAgent: (options) => new Agent(options as AgentOptions<BaseLLM, unknown, SyncHook>),
  executor: (actions, hooks) =>
    new ActionExecutor({ actions: actions as BaseAction[], hooks: hooks as SyncHook[] }),
}) {
  declare selectAgent: Agent<F | ReActParseFailure>;

  constructor(options: ReActOptions<BaseLLM, BaseAction, F, SyncHook>) {
    super(options as ReActOptions<BaseLLM, BaseAction, unknown, SyncHook>);
  }

  override forward(
    messages: AgentMessage[],
    options: ForwardOptions,
  ): AgentMessage<string, F | ReActParseFailure | null> {
    return driveSync(reactSteps(this, messages, options)) as AgentMessage<
      string,
      F | ReActParseFailure | null
    >;
  }
}

/** {@link ReAct} on an async model and tools (sync tools run too); calls take a `signal`. */
export class AsyncReAct<F = ReActStep> extends reactAgentClass<
  AsyncAgent,
  AsyncAgent<unknown>,
  AsyncActionExecutor,
  ReActOptions<AsyncBaseLLM, ActionBase, unknown, AsyncHook>
>(AsyncAgent, {
  selectAgent: (options) => new AsyncAgent(options as AgentOptions<AsyncBaseLLM, unknown, AsyncHook>),
  executor: (actions, hooks) => new AsyncActionExecutor({ actions, hooks: hooks as AsyncHook[] }),
}) {
  declare selectAgent: AsyncAgent<F | ReActParseFailure>;

  constructor(options: ReActOptions<AsyncBaseLLM, ActionBase, F, AsyncHook>) {
    super(options as ReActOptions<AsyncBaseLLM, ActionBase, unknown, AsyncHook>);
  }

  override forward(
    messages: AgentMessage[],
    options: AsyncForwardOptions,
  ): Promise<AgentMessage<string, F | ReActParseFailure | null>> {
    return driveAsync(reactSteps(this, messages, options)) as Promise<
      AgentMessage<string, F | ReActParseFailure | null>
    >;
  }
}

// The loops keep a paused round in memory and resume from it: their calls need no journal to resume.
resumesFromMemory(ReAct.prototype.forward);
resumesFromMemory(AsyncReAct.prototype.forward);
