import type { AgentBase } from '../agents/agent-base';
import type { Budget } from '../agents/interceptors/budget/meter';
import { DURABLE } from '../agents/interceptors/durable/journal';
import { isLoopbackHost } from '../core/request-guard';
import { type CallerOptionsPolicy, camelKey, type GenerationBounds } from '../distributed/caller-options';
import type { ServedAgent } from '../distributed/http/server';
import type { LoadedAgent } from './agent-source';
import { CliError, messageOf } from './errors';
import { untilStopped } from './lifetime';

/** Options of {@link runServe}. */
export interface ServeOptions {
  host: string;
  port: number;
  token?: string | undefined;
  /** More names the `Host` header may carry (HTTPAgentServer's `allowedHosts`). */
  allowedHosts?: readonly string[] | undefined;
  /** Origins whose web pages may call the server (HTTPAgentServer's `allowedOrigins`). */
  allowedOrigins?: readonly string[] | undefined;
  /** What callers may set on a call (HTTPAgentServer's `callerOptions`), from `--allow-params` and `--max-budget`. */
  callerOptions?: CallerOptionsPolicy | undefined;
}

const GENERATION_PARAMS = ['maxNewTokens', 'temperature', 'topP', 'topK', 'repetitionPenalty', 'stopWords'];
const BUDGET_LIMITS = ['tokens', 'usd', 'modelCalls', 'toolCalls'];

/**
 * The caller policy of `--allow-params` (`max_new_tokens=1..2048,temperature,stop_words=8`: each generation
 * parameter callers may set, with its bounds as `min..max` (either end may be left out: that end's default),
 * a bare name for the default bounds; for `stop_words` the most words), `--max-budget`
 * (`tokens=50000,usd=0.5,model_calls=20`: the most one call may spend) and `--refuse-out-of-bounds`.
 * Throws a {@link CliError} naming what it cannot read.
 */
export function callerOptionsOf(flags: {
  allowParams?: string | undefined;
  maxBudget?: string | undefined;
  refuseOutOfBounds?: boolean | undefined;
}): CallerOptionsPolicy | undefined {
  const policy: CallerOptionsPolicy = {};
  if (flags.allowParams !== undefined) {
    const generation: Record<string, unknown> = {};
    for (const item of items(flags.allowParams)) {
      const [key, bounds] = split(item);
      const name = camelKey(key);
      if (!GENERATION_PARAMS.includes(name)) {
        throw new CliError(
          `--allow-params: unknown parameter "${key}" (known: max_new_tokens, temperature, top_p, top_k, repetition_penalty, stop_words)`,
        );
      }
      if (bounds === undefined) generation[name] = true;
      else if (name === 'stopWords')
        generation[name] = { maxCount: numberOf('--allow-params', item, bounds) };
      else {
        const ends = bounds.split('..').map((end) => end.trim());
        if (ends.length !== 2) {
          throw new CliError(`--allow-params: "${item}" must be name=min..max (either end may be left out)`);
        }
        const [min, max] = ends;
        generation[name] = {
          ...(min === '' ? {} : { min: numberOf('--allow-params', item, min!) }),
          ...(max === '' ? {} : { max: numberOf('--allow-params', item, max!) }),
        };
      }
    }
    policy.generation = generation as GenerationBounds;
  }
  if (flags.maxBudget !== undefined) {
    const budget: Record<string, number> = {};
    for (const item of items(flags.maxBudget)) {
      const [key, value] = split(item);
      const name = camelKey(key);
      if (!BUDGET_LIMITS.includes(name) || value === undefined) {
        throw new CliError(`--max-budget: "${item}" must be tokens=N, usd=N, model_calls=N or tool_calls=N`);
      }
      budget[name] = numberOf('--max-budget', item, value);
    }
    policy.maxBudget = budget as Budget;
  }
  if (flags.refuseOutOfBounds) policy.outOfBounds = 'refuse';
  return Object.keys(policy).length === 0 ? undefined : policy;
}

function items(list: string): string[] {
  return list
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

function split(item: string): [string, string | undefined] {
  const index = item.indexOf('=');
  return index < 0 ? [item, undefined] : [item.slice(0, index).trim(), item.slice(index + 1).trim()];
}

function numberOf(flag: string, item: string, text: string): number {
  const value = Number(text);
  if (text === '' || !Number.isFinite(value))
    throw new CliError(`${flag}: "${item}" has no number where one goes`);
  return value;
}

/**
 * Throws a {@link CliError} for options `lagent serve` refuses before loading the agent: a host other than a
 * loopback one without a token, where anybody who can reach the port could run the agent.
 */
export function checkServeOptions(options: ServeOptions): void {
  if (!options.token && !isLoopbackHost(options.host)) {
    throw new CliError(
      `refusing to serve on ${options.host} without a token: anybody who can reach it could run the agent. ` +
        'Set --token (or LAGENT_TOKEN), or serve on a loopback host such as 127.0.0.1',
    );
  }
}

/**
 * `lagent serve`: serves the agent with `HTTPAgentServer` (Lagent's HTTP protocol) until SIGINT or SIGTERM,
 * then closes the server (calls in progress finish) and the agent's tools. A host other than a loopback one
 * needs a token: without one, anybody who can reach the port could run the agent.
 */
export async function runServe(loaded: LoadedAgent, options: ServeOptions): Promise<void> {
  checkServeOptions(options);
  const { HTTPAgentServer } = await import('../distributed/http/server');
  let server: InstanceType<typeof HTTPAgentServer>;
  try {
    server = new HTTPAgentServer({
      agent: loaded.agent as ServedAgent,
      host: options.host,
      port: options.port,
      token: options.token,
      allowedHosts: options.allowedHosts,
      allowedOrigins: options.allowedOrigins,
      callerOptions: options.callerOptions,
    });
  } catch (error) {
    throw new CliError(messageOf(error), { cause: error });
  }
  const stopped = untilStopped();
  let url: string;
  try {
    url = await server.listen();
  } catch (error) {
    throw new CliError(`cannot listen on ${options.host}:${options.port}: ${messageOf(error)}`, {
      cause: error,
    });
  }
  const name = loaded.agent.name ? `${loaded.agent.name} ` : '';
  process.stdout.write(
    `lagent serve: ${name}listening on ${url}${options.token ? ' (token required)' : ''}\n`,
  );
  // Calls a previous run left unfinished (it was killed) are recovered while the server answers.
  void recoverUnfinished(loaded.agent);
  const signal = await stopped;
  process.stderr.write(`lagent serve: ${signal}, shutting down\n`);
  await server.close();
}

/**
 * Recovers every durable call of the agent's journal namespace that a process left unfinished (a server
 * killed mid-call), as `agent.recoverAll()` does, and says on stdout how many (on stderr, what failed). A call
 * still held by a process that died is taken over when its lease runs out (`--lease-ms`).
 */
export async function recoverUnfinished(agent: unknown, command = 'serve'): Promise<void> {
  const durable = agent as AgentBase;
  if (typeof durable?.recoverAll !== 'function' || durable[DURABLE] === undefined) return;
  try {
    const sessions = await durable.recoverAll();
    const calls = sessions.reduce((sum, session) => sum + session.replies.length, 0);
    const failed = sessions.filter((session) => session.error !== undefined);
    if (sessions.length > 0) {
      process.stdout.write(
        `lagent ${command}: recovered ${calls} unfinished call${calls === 1 ? '' : 's'} of ${sessions.length - failed.length} session${sessions.length - failed.length === 1 ? '' : 's'}\n`,
      );
    }
    for (const session of failed) {
      process.stderr.write(
        `lagent ${command}: recovering session ${JSON.stringify(session.sessionId)} failed: ${messageOf(session.error)}\n`,
      );
    }
  } catch (error) {
    process.stderr.write(`lagent ${command}: recovering unfinished calls failed: ${messageOf(error)}\n`);
  }
}
