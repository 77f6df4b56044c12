import { ActionExecutor } from '../../actions/action-executor';
import { AsyncActionExecutor } from '../../actions/async-action-executor';
import type { ActionBase, BaseAction } from '../../actions/base-action';
import { getPluginPrompt } from '../../actions/plugin-prompt';
import { currentFrame } from '../../core/call-context';
import { driveAsync, driveSync, type Steps } from '../../core/steps';
import { InternLMActionProcessor } from '../../hooks/action-preprocessor';
import type { AsyncHook, Hook, SyncHook } from '../../hooks/hook';
import type { AsyncBaseLLM, BaseLLM } from '../../llms/base-llm';
import type { OutputParser } from '../../prompts/output-parser';
import { InterpreterParser } from '../../prompts/parsers/interpreter-parser';
import { MixedToolParser } from '../../prompts/parsers/mixed-tool-parser';
import { PluginParser } from '../../prompts/parsers/plugin-parser';
import type { AgentMessage } from '../../schema/agent-message';
import type { ChatMessage, ToolCall } from '../../schema/chat-message';
import { ValidationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import { ToolStatusCode } from '../../schema/status';
import { actionText, asToolResponse, type ToolResponse } from '../../schema/tool-response';
import { isPlainObject } from '../../utils/is';
import { Agent } from '../agent';
import type {
  AgentBase,
  AgentOptions,
  AsyncForwardOptions,
  ForwardOptions,
  MemoryConfig,
} from '../agent-base';
import type { AgentClass } from '../agent-class';
import { contentToText } from '../aggregator/content';
import type { DefaultAggregator, SystemInstruction } from '../aggregator/default-aggregator';
import { InternLMToolAggregator } from '../aggregator/internlm-tool-aggregator';
import { AsyncAgent } from '../async-agent';
import type { RoundKind } from '../interceptors/approvals/rounds';
import { resumesFromMemory } from '../interceptors/durable/in-process';
import type { DurableOptions } from '../interceptors/durable/journal';
import { RESUME } from '../interceptors/slots';
import { TOOL_TURNS, WAITING_CALLS, type WaitingCalls } from '../pending-interrupts';
import { type CompatMode, checkCompat } from './compat';
import { INTERNLM_PROMPTS, type InternLMPrompts, type PromptLanguage } from './internlm-prompts';
import { LAGENT_INTERPRETER_CN, LAGENT_META_CN, LAGENT_PLUGIN_CN } from './lagent-prompts';
import {
  builtinTurn,
  checkMaxTurn,
  type LoopAgent,
  type LoopExecutor,
  maxTurnReply,
  subCall,
} from './loop-turns';
import { markedChunk, toolState, withToolStates } from './stream-states';
import {
  editedAnswer,
  lastMessageOf,
  planTextCall,
  stoppedUnanswered,
  type TextCall,
  type TextCallPlan,
  textCallId,
} from './text-approval';

/** Options of the `AgentForInternLM` family: `L` the model, `A` the tools, `H` the hooks. */
export interface AgentForInternLMOptions<L, A extends ActionBase, H extends Hook> {
  /** The model (InternLM's chat protocol: `<|action_start|><|plugin|>` ... `<|action_end|>`). */
  llm: L;
  /** Tools called with JSON (`{"name": ..., "parameters": ...}`). */
  plugins?: A | readonly A[] | undefined;
  /** The code interpreter: code goes to the first action's `command` argument. */
  interpreter?: A | readonly A[] | undefined;
  /** The system instruction, before the tool instructions. */
  template?: SystemInstruction | undefined;
  /** The language of the default instructions. @default 'zh' (Lagent's) */
  language?: PromptLanguage | undefined;
  /**
   * `'lagent'`: the default instructions are Python Lagent's own texts, character for character
   * (`LAGENT_META_CN`, `LAGENT_PLUGIN_CN`, `LAGENT_INTERPRETER_CN`; Chinese only). Off by default: the
   * defaults then say the same in this library's words.
   */
  compat?: CompatMode | undefined;
  /** Reads tool calls. @default internLMOutputFormat({ plugins, interpreter, language, compat }) */
  outputFormat?: OutputParser<ToolResponse> | undefined;
  /** The inner agent's memory. @default {} */
  memory?: MemoryConfig | undefined;
  /** @default new InternLMToolAggregator() (tool results in the `environment` role) */
  aggregator?: DefaultAggregator | undefined;
  /** The executors' hooks. @default [new InternLMActionProcessor()] */
  actionHooks?: readonly H[] | undefined;
  /** Whether a model reply is the answer. @default the reply calls no tool */
  finishCondition?: ((message: AgentMessage) => boolean) | undefined;
  /** The most model turns per call. @default 4 */
  maxTurn?: number | undefined;
  /** Hooks of this agent itself (the inner agent's are `agent.registerHook`). */
  hooks?: H[] | undefined;
  /** @default the class name */
  name?: string | undefined;
  description?: string | undefined;
  /** Journals each call's model and tool steps in a store, so a crashed or paused call goes on where it was. */
  durable?: DurableOptions | undefined;
}

/** What {@link internLMOutputFormat} builds the instructions for. */
export interface InternLMOutputFormatOptions {
  plugins?: ActionBase | readonly ActionBase[] | undefined;
  interpreter?: ActionBase | readonly ActionBase[] | undefined;
  /** @default 'zh' */
  language?: PromptLanguage | undefined;
  /** `'lagent'`: Lagent's own instruction texts (see `AgentForInternLMOptions.compat`). */
  compat?: CompatMode | undefined;
}

/** Python Lagent's own texts, used with `compat: 'lagent'`. */
const LAGENT_INTERNLM_PROMPTS: InternLMPrompts = Object.freeze({
  meta: LAGENT_META_CN,
  plugin: LAGENT_PLUGIN_CN,
  interpreter: LAGENT_INTERPRETER_CN,
});

function isPresent(actions: ActionBase | readonly ActionBase[] | undefined): boolean {
  return Array.isArray(actions) ? actions.length > 0 : actions !== undefined && actions !== null;
}

/**
 * The default output format of `AgentForInternLM`: a `MixedToolParser` reading plugin and interpreter calls,
 * whose instructions (system messages named `plugin` / `interpreter`, as InternLM's chat template expects)
 * cover the tools that are there: the plugin prompt lists the plugins (`getPluginPrompt`). Both kinds of
 * call are always read, so a call of a kind the agent lacks is answered rather than taken for an answer.
 *
 * @example
 * internLMOutputFormat({ plugins: [search], language: 'en' }).formatInstruction();
 * // [{ role: 'system', content: 'When tools ...' }, { role: 'system', content: 'These tools ...', name: 'plugin' }]
 */
export function internLMOutputFormat(
  options: InternLMOutputFormatOptions = {},
): MixedToolParser<PluginParser | InterpreterParser> {
  const lagent = checkCompat('internLMOutputFormat', options.compat, options.language, 'zh');
  const prompts = lagent ? LAGENT_INTERNLM_PROMPTS : INTERNLM_PROMPTS[options.language ?? 'zh'];
  const plugins = options.plugins;
  return new MixedToolParser<PluginParser | InterpreterParser>({
    template: prompts.meta,
    parsers: [
      isPresent(plugins)
        ? new PluginParser({ template: prompts.plugin, prompt: getPluginPrompt(plugins!) })
        : new PluginParser(),
      isPresent(options.interpreter)
        ? new InterpreterParser({ template: prompts.interpreter })
        : new InterpreterParser(),
    ],
  });
}

/**
 * The tool turns of a session as a few-shot dialog (Lagent's `get_steps`): each model turn as a `thought`
 * (and its call as a `tool` message named by tool type), each result as an `environment` message named by
 * the last tool type. User messages are left out. Feed it to `InternLMToolAggregator({ fewShot })`.
 */
export function toolSteps(agent: AgentBase, sessionId: SessionId = 0): ChatMessage[] {
  const steps: ChatMessage[] = [];
  let toolType: string | null = null;
  for (const message of agent.memory?.getMemory(sessionId) ?? []) {
    if (message.sender === agent.name) {
      const response = asToolResponse(message.formatted);
      steps.push({ role: 'thought', content: response ? response.thought : contentToText(message.content) });
      if (response?.toolType) {
        toolType = response.toolType;
        steps.push({ role: 'tool', content: actionText(response.action), name: toolType });
      }
    } else if (message.sender !== 'user') {
      const feedback: ChatMessage = { role: 'environment', content: contentToText(message.content) };
      if (toolType) feedback.name = toolType;
      steps.push(feedback);
    }
  }
  return steps;
}

/** The default finish condition: the reply calls no tool. */
export function callsNoTool(message: AgentMessage): boolean {
  return (asToolResponse(message.formatted)?.status ?? ToolStatusCode.NO_TOOL) === ToolStatusCode.NO_TOOL;
}

/** InternLM's call markers; one in a reply that reads as no call means the call is malformed. */
const MARKERS = ['<|action_start|>', '<|plugin|>', '<|interpreter|>', '<|action_end|>'];

function strayMarker(reply: AgentMessage): string | undefined {
  if (asToolResponse(reply.formatted)?.status !== ToolStatusCode.NO_TOOL) return undefined;
  const content = typeof reply.content === 'string' ? reply.content : '';
  return MARKERS.find((marker) => content.includes(marker));
}

/** Answers the builtin turns of an agent that has neither executor. */
const NO_TOOLS = new ActionExecutor({ actions: [] });

/** What the InternLM loop needs of its agent. */
export interface InternLMLoop {
  readonly name: string;
  readonly agent: LoopAgent;
  readonly pluginExecutor: LoopExecutor | undefined;
  readonly interpreterExecutor: LoopExecutor | undefined;
  readonly maxTurn: number;
  readonly finishCondition: (message: AgentMessage) => boolean;
}

function executorFor(owner: InternLMLoop, toolType: string): LoopExecutor | undefined {
  if (toolType === 'plugin') return owner.pluginExecutor;
  if (toolType === 'interpreter') return owner.interpreterExecutor;
  return undefined;
}

/** The argument that receives code in an executor's interpreter calls (its `InternLMActionProcessor`'s). */
function codeParameterOf(executor: LoopExecutor): string {
  const hooks = (executor as unknown as { hooks?: readonly unknown[] }).hooks ?? [];
  const processor = hooks.find((hook) => hook instanceof InternLMActionProcessor);
  return (processor as InternLMActionProcessor | undefined)?.codeParameter ?? 'command';
}

/**
 * The call a model reply makes of `executor`, as the executor's hooks read it: a plugin's
 * `{ name, parameters }`, or code for the interpreter's first tool; null when the reply holds no valid call.
 */
function callOf(executor: LoopExecutor, reply: AgentMessage): TextCall | null {
  const response = asToolResponse(reply.formatted);
  if (response?.status !== ToolStatusCode.VALID_TOOL) return null;
  const action = response.action;
  if (typeof action === 'string') {
    const name = (executor as unknown as { keys(): string[] }).keys()[0];
    return name === undefined ? null : { name, parameters: { [codeParameterOf(executor)]: action } };
  }
  if (!isPlainObject(action) || typeof action.name !== 'string') return null;
  return { name: action.name, parameters: action.parameters ?? {} };
}

/**
 * The model's reply whose call waits for a decision: the inner agent's last message when it is a tool
 * call the loop never answered (the loop's previous call stopped before running it).
 */
function pendingCall(owner: InternLMLoop, sessionId: SessionId, inputs: number): AgentMessage | undefined {
  const last = lastMessageOf(owner.agent, sessionId);
  if (last === undefined) return undefined;
  const toolType = asToolResponse(last.formatted)?.toolType ?? null;
  const executor = toolType === null ? undefined : executorFor(owner, toolType);
  if (executor === undefined || callOf(executor, last) === null) return undefined;
  if (strayMarker(last) !== undefined || owner.finishCondition(last)) return undefined;
  return stoppedUnanswered(owner as unknown as AgentBase, sessionId, inputs) ? last : undefined;
}

/**
 * A tool turn of an executor: the call checked for approval (see `text-approval.ts`), then run, or
 * answered with the user's refusal; streamed as the call (`PLUGIN_END` / `CODE_END`) and its result.
 * Undefined when a new message supersedes a call that needs no decision.
 */
function* executorTurn(
  owner: InternLMLoop,
  executor: LoopExecutor,
  reply: AgentMessage,
  toolType: string,
  sessionId: SessionId,
  streaming: boolean,
  round: RoundKind,
): Steps<AgentMessage | undefined> {
  const action = callOf(executor, reply);
  let plan: TextCallPlan | undefined = { run: true, message: reply };
  if (action !== null) {
    const call: ToolCall = {
      id: textCallId(owner.agent, sessionId),
      name: action.name,
      arguments: action.parameters as ToolCall['arguments'],
    };
    const gate = owner as unknown as AgentBase;
    plan = yield* planTextCall(gate, executor, reply, call, reply, sessionId, round);
    if (plan === undefined) return undefined;
  }
  if (streaming) yield markedChunk(reply, toolState(toolType, 'end'), '');
  if (!plan.run) return plan.answer;
  const result: AgentMessage = yield* subCall(executor.call(plan.message, { sessionId }));
  return plan.edited === undefined ? result : editedAnswer(result, plan.edited);
}

/**
 * The InternLM loop, written once for all four variants. With `streaming`, it also emits the finished
 * tool call (`PLUGIN_END` / `CODE_END`) and its result (`PLUGIN_RETURN` / `CODE_RETURN`) as chunks.
 */
export function* internLMLoop(
  owner: InternLMLoop,
  messages: AgentMessage[],
  options: ForwardOptions,
  streaming: boolean,
): Steps<AgentMessage> {
  const { sessionId } = options;
  let input: AgentMessage | AgentMessage[] = messages;
  let last: AgentMessage | undefined;
  const frame = currentFrame();
  const pending = pendingCall(owner, sessionId, messages.length);
  if (pending !== undefined) {
    // The session waits for a decision on this call: given it, the call runs (or is answered with the
    // refusal); given another message, a call that needed approval is declined and the loop goes on.
    const toolType = asToolResponse(pending.formatted)!.toolType!;
    const executor = executorFor(owner, toolType)!;
    const round = frame?.find(RESUME) !== undefined ? 'resumed' : 'superseded';
    const answer = yield* executorTurn(owner, executor, pending, toolType, sessionId, streaming, round);
    if (answer !== undefined) {
      if (streaming) yield resultChunk(answer, toolType);
      input = messages.length === 0 ? answer : [answer, ...messages];
    }
  } else if (frame?.owner === owner && frame.get(RESUME) !== undefined && messages.length === 0) {
    throw new ValidationError({
      message: `${owner.name}: session ${JSON.stringify(String(sessionId))} has no call waiting for a decision`,
      field: 'decisions',
    });
  }
  for (let turn = 0; turn < owner.maxTurn; turn++) {
    const call = owner.agent.call(input as AgentMessage, options);
    const reply: AgentMessage = yield* subCall(streaming ? withToolStates(call) : call);
    const stray = strayMarker(reply);
    if (stray === undefined && owner.finishCondition(reply)) return reply;
    const toolType = asToolResponse(reply.formatted)?.toolType ?? null;
    const executor = toolType === null ? undefined : executorFor(owner, toolType);
    if (stray === undefined && executor !== undefined) {
      last = (yield* executorTurn(owner, executor, reply, toolType!, sessionId, streaming, 'live'))!;
    } else {
      if (streaming && toolType !== null) yield markedChunk(reply, toolState(toolType, 'end'), '');
      const fallback = owner.interpreterExecutor ?? owner.pluginExecutor ?? NO_TOOLS;
      if (stray !== undefined) {
        const errMsg = `The reply has ${stray} but no complete tool call. Write a call as <|action_start|><|plugin|> or <|action_start|><|interpreter|>, a new line, the call, then <|action_end|>; or answer without the markers.`;
        last = yield* builtinTurn(fallback, fallback.noAction.name, { errMsg }, sessionId);
      } else if (toolType === null) {
        last = yield* builtinTurn(fallback, fallback.noAction.name, {}, sessionId);
      } else {
        // No executor for this kind of call: its InvalidAction names the missing tool.
        last = yield* builtinTurn(NO_TOOLS, toolType, {}, sessionId);
      }
    }
    if (streaming) yield resultChunk(last, toolType);
    input = last;
  }
  return maxTurnReply(owner.name, owner.maxTurn, last!);
}

/** A tool result as a stream chunk (`PLUGIN_RETURN` / `CODE_RETURN`). */
function resultChunk(result: AgentMessage, toolType: string | null): ReturnType<typeof markedChunk> {
  const text = typeof result.content === 'string' ? result.content : '';
  return markedChunk(result, toolState(toolType, 'result'), text);
}

interface Executors<E> {
  plugins: E | undefined;
  interpreter: E | undefined;
}

/** The settings every variant shares, read from the options once. */
export function internLMParts<H extends Hook, E>(
  owner: string,
  options: AgentForInternLMOptions<unknown, ActionBase, H>,
  createExecutor: (actions: ActionBase | readonly ActionBase[], hooks: readonly H[]) => E,
) {
  checkCompat(owner, options.compat, options.language, 'zh');
  const hooks = options.actionHooks ?? [new InternLMActionProcessor() as unknown as H];
  const executors: Executors<E> = {
    plugins: isPresent(options.plugins) ? createExecutor(options.plugins!, hooks) : undefined,
    interpreter: isPresent(options.interpreter) ? createExecutor(options.interpreter!, hooks) : undefined,
  };
  const outputFormat =
    options.outputFormat ??
    internLMOutputFormat({
      plugins: options.plugins,
      interpreter: options.interpreter,
      language: options.language,
      compat: options.compat,
    });
  return {
    executors,
    inner: {
      llm: options.llm,
      template: options.template,
      outputFormat,
      memory: options.memory,
      aggregator: options.aggregator ?? new InternLMToolAggregator(),
    },
    maxTurn: checkMaxTurn(owner, options.maxTurn ?? 4),
    finishCondition: options.finishCondition ?? callsNoTool,
  };
}

/** What every InternLM agent variant has; `I` is the inner agent's class, `E` the executors'. */
export interface InternLMAgentFields<I, E> {
  /** Talks to the model; its memory holds the tool turns. */
  agent: I;
  /** Runs plugin calls (none without plugins). */
  pluginExecutor: E | undefined;
  /** Runs code (none without an interpreter). */
  interpreterExecutor: E | undefined;
  /** The most model turns per call. */
  maxTurn: number;
  /** Whether a model reply is the answer. */
  finishCondition: (message: AgentMessage) => boolean;
  /** The tool turns of a session as a few-shot dialog (see `toolSteps`). */
  getSteps(sessionId?: SessionId): ChatMessage[];
}

/** What differs between the InternLM agent variants: the inner agent's class and the executors'. */
export interface InternLMVariant<I, E> {
  inner(options: ReturnType<typeof internLMParts>['inner']): I;
  executor(actions: ActionBase | readonly ActionBase[], hooks: readonly Hook[]): E;
}

/** The InternLM agents' shared fields, constructor and `getSteps`, over a variant's base class (see {@link AgentClass}). */
export function internLMAgentClass<A extends AgentBase, I extends AgentBase, E, O>(
  Base: AgentClass<A>,
  variant: InternLMVariant<I, E>,
) {
  abstract class InternLMAgent extends (Base as AgentClass<AgentBase>) {
    agent: I;
    pluginExecutor: E | undefined;
    interpreterExecutor: E | undefined;
    maxTurn: number;
    finishCondition: (message: AgentMessage) => boolean;

    constructor(options: AgentForInternLMOptions<unknown, ActionBase, Hook>) {
      super({
        name: options.name,
        description: options.description,
        hooks: options.hooks,
        durable: options.durable,
      });
      const parts = internLMParts(this.name, options, variant.executor);
      this.agent = variant.inner(parts.inner);
      this.pluginExecutor = parts.executors.plugins;
      this.interpreterExecutor = parts.executors.interpreter;
      this.maxTurn = parts.maxTurn;
      this.finishCondition = parts.finishCondition;
    }

    getSteps(sessionId: SessionId = 0): ChatMessage[] {
      return toolSteps(this.agent, sessionId);
    }

    /** The call of the inner agent's last reply when the loop never answered it (see `pendingInterrupts`). */
    [WAITING_CALLS](sessionId: SessionId): WaitingCalls | undefined {
      const owner = this as unknown as InternLMLoop;
      const reply = pendingCall(owner, sessionId, 0);
      if (reply === undefined) return undefined;
      const executor = executorFor(owner, asToolResponse(reply.formatted)!.toolType!)!;
      const action = callOf(executor, reply)!;
      const id = textCallId(owner.agent, sessionId);
      const call: ToolCall = { id, name: action.name, arguments: action.parameters as ToolCall['arguments'] };
      return { calls: [call], executor };
    }

    get [TOOL_TURNS](): AgentBase {
      return this.agent;
    }
  }
  return InternLMAgent as unknown as AgentClass<A & InternLMAgentFields<I, E>> & {
    new (options: O): A & InternLMAgentFields<I, E>;
  };
}

/** The sync variants' executors. */
export function syncExecutor(
  actions: ActionBase | readonly ActionBase[],
  hooks: readonly Hook[],
): ActionExecutor {
  return new ActionExecutor({ actions: actions as BaseAction[], hooks: hooks as SyncHook[] });
}

/** The async variants' executors (sync tools run too). */
export function asyncExecutor(
  actions: ActionBase | readonly ActionBase[],
  hooks: readonly Hook[],
): AsyncActionExecutor {
  return new AsyncActionExecutor({ actions, hooks: hooks as AsyncHook[] });
}

/**
 * Lagent's `AgentForInternLM`: an inner agent talks InternLM's tool protocol — plugin calls
 * (`<|action_start|><|plugin|>\n{"name": ..., "parameters": ...}<|action_end|>`) and code
 * (`<|action_start|><|interpreter|>\n...<|action_end|>`) — read by a `MixedToolParser`; the call goes to the
 * plugin or interpreter executor (`InternLMActionProcessor`), and its result back to the model in the
 * `environment` role (`InternLMToolAggregator`), until a reply calls no tool or `maxTurn` turns have run.
 * Malformed calls (bad JSON, stray markers, a kind of tool the agent lacks, unknown tools) come back to the
 * model as `NoAction` / `InvalidAction` results. The reply is the model's answer; the tool turns are in
 * the inner agent's memory (`stateDict()` keys `memory`, `agent.memory`).
 *
 * A plugin or interpreter call that needs approval (the tool's `needsApproval`, or the executor's; code is
 * asked about as `{ command: code }` for the interpreter's tool) is not run: the call returns an interrupt
 * reply (`interruptsOf`; the call's id is `call_<n>`, the model's reply's place in the inner agent's memory).
 * `resumeWith(decisions)` on the session runs it (with edited arguments) or gives the model the refusal in
 * the `environment` role; a new message instead declines it and goes on.
 *
 * @example
 * const agent = new AgentForInternLM({ llm, plugins: [search], interpreter: python, language: 'en' });
 * agent.call('Who won the 2022 World Cup?').content;
 */
export class AgentForInternLM extends internLMAgentClass<
  Agent,
  Agent<ToolResponse>,
  ActionExecutor,
  AgentForInternLMOptions<BaseLLM, BaseAction, SyncHook>
>(Agent, {
  inner: (options) => new Agent(options as AgentOptions<BaseLLM, ToolResponse, SyncHook>),
  executor: syncExecutor,
}) {
  override forward(
    messages: AgentMessage[],
    options: ForwardOptions,
  ): AgentMessage<string, ToolResponse | null> {
    return driveSync(internLMLoop(this, messages, options, false)) as AgentMessage<
      string,
      ToolResponse | null
    >;
  }
}

/** {@link AgentForInternLM} on an async model and tools (sync tools run too); calls take a `signal`. */
export class AsyncAgentForInternLM extends internLMAgentClass<
  AsyncAgent,
  AsyncAgent<ToolResponse>,
  AsyncActionExecutor,
  AgentForInternLMOptions<AsyncBaseLLM, ActionBase, AsyncHook>
>(AsyncAgent, {
  inner: (options) => new AsyncAgent(options as AgentOptions<AsyncBaseLLM, ToolResponse, AsyncHook>),
  executor: asyncExecutor,
}) {
  override forward(
    messages: AgentMessage[],
    options: AsyncForwardOptions,
  ): Promise<AgentMessage<string, ToolResponse | null>> {
    return driveAsync(internLMLoop(this, messages, options, false)) as Promise<
      AgentMessage<string, ToolResponse | null>
    >;
  }
}

// The loops keep a paused round in memory and resume from it: their calls need no journal to resume.
resumesFromMemory(AgentForInternLM.prototype.forward);
resumesFromMemory(AsyncAgentForInternLM.prototype.forward);
