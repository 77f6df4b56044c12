import { AsyncBaseLLM, BaseLLM } from '../llms/base-llm';
import { AsyncRecordingLLM, RecordingLLM } from '../llms/recording-llm';
import { AsyncReplayLLM, ReplayLLM } from '../llms/replay-llm';
import type { ResolvedGenParams } from '../llms/types';
import type { AgentLike } from './agent-like';
import type { LoadedAgent } from './agent-source';
import { CliError, messageOf } from './errors';

/** What `--record` and `--replay` ask for: one of them, with its file. */
export interface RecordReplayFlags {
  record?: string | undefined;
  replay?: string | undefined;
}

/** An agent of the tree that has a model, with the path the model is labelled by in the recording. */
interface ModelSlot {
  agent: { llm: unknown };
  /** `llm` for the top agent, `writer.llm`, `0.llm` ... for sub-agents. */
  label: string;
}

function hasModel(value: unknown): value is { llm: unknown } {
  const llm = (value as { llm?: unknown } | null)?.llm;
  return llm !== null && typeof llm === 'object' && typeof (llm as { chat?: unknown }).chat === 'function';
}

/** Every agent of the tree with a model in its `llm` property, depth first. */
function modelSlots(agent: AgentLike): ModelSlot[] {
  const named = (agent as { namedAgents?: () => Iterable<[string, unknown]> }).namedAgents;
  const agents: [string, unknown][] = typeof named === 'function' ? [...named.call(agent)] : [['', agent]];
  return agents
    .filter(([, node]) => hasModel(node))
    .map(([path, node]) => ({
      agent: node as { llm: unknown },
      label: `${path}llm`,
    }));
}

/** Whether a model is synchronous (a `BaseLLM`), also for a model of another copy of the library. */
function isSync(llm: object): boolean {
  if (llm instanceof BaseLLM) return true;
  if (llm instanceof AsyncBaseLLM) return false;
  for (let proto = Object.getPrototypeOf(llm); proto !== null; proto = Object.getPrototypeOf(proto)) {
    const name = (proto.constructor as { name?: string } | undefined)?.name;
    if (name === 'BaseLLM') return true;
    if (name === 'AsyncBaseLLM') return false;
  }
  return false;
}

function defaultsOf(llm: object): ResolvedGenParams | undefined {
  return (llm as { genParams?: ResolvedGenParams }).genParams;
}

/**
 * The loaded agent with every model of its tree (each agent's `llm`) recorded to, or replayed from, one JSONL
 * file; each model's calls are labelled by its path (`llm`, `writer.llm`), so a tree of several models replays
 * each from its own calls. A model two agents share is wrapped once. The command's end writes what is queued.
 */
export function withRecordReplay(loaded: LoadedAgent, flags: RecordReplayFlags): LoadedAgent {
  const { record, replay } = flags;
  if (record === undefined && replay === undefined) return loaded;
  if (record !== undefined && replay !== undefined) {
    throw new CliError('--record and --replay cannot be combined: record a run, then replay it');
  }
  const slots = modelSlots(loaded.agent);
  if (slots.length === 0) {
    throw new CliError(
      `${record !== undefined ? '--record' : '--replay'} needs an agent whose model is in an llm property (an agent of lagent-ts, or a tree of them); this agent has none`,
    );
  }
  const wrapped = new Map<object, unknown>();
  const recorders: (RecordingLLM | AsyncRecordingLLM)[] = [];
  try {
    for (const slot of slots) {
      const llm = slot.agent.llm as BaseLLM | AsyncBaseLLM;
      let wrapper = wrapped.get(llm);
      if (wrapper === undefined) {
        const sync = isSync(llm);
        if (record !== undefined) {
          const recorder = sync
            ? new RecordingLLM(llm as BaseLLM, { file: record, label: slot.label })
            : new AsyncRecordingLLM(llm as AsyncBaseLLM, { file: record, label: slot.label });
          recorders.push(recorder);
          wrapper = recorder;
        } else {
          const options = { file: replay!, label: slot.label, genParams: defaultsOf(llm) };
          wrapper = sync ? new ReplayLLM(options) : new AsyncReplayLLM(options);
        }
        wrapped.set(llm, wrapper);
      }
      slot.agent.llm = wrapper;
    }
  } catch (error) {
    throw new CliError(messageOf(error), { cause: error });
  }
  return {
    agent: loaded.agent,
    resourceId: loaded.resourceId,
    close: async () => {
      try {
        await Promise.all(recorders.map((recorder) => recorder.flush()));
      } finally {
        await loaded.close();
      }
    },
  };
}
