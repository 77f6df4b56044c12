import type { Budget } from '../agents/interceptors/budget/meter';
import type { RecoveredRun } from '../agents/runs/recover-runs';
import { isLoopbackHost } from '../core/request-guard';
import { type CallerOptionsPolicy, camelKey, type GenerationBounds } from '../distributed/caller-options';
import type { HTTPAgentServerOptions, ServedAgent } from '../distributed/http/server';
import { PROTOCOL_NAMES, type ProtocolName } from '../distributed/protocols/register';
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
  /** The protocols served besides Lagent's own (`--protocols`); undefined: all of them. */
  protocols?: readonly ProtocolName[] | undefined;
}

/** Where each protocol answers, for the line `lagent serve` and `lagent ui` print. */
const PROTOCOL_ROUTES: Readonly<Record<ProtocolName, string>> = {
  openai: 'POST /v1/chat/completions',
  'ai-sdk': 'POST /api/chat',
  'ag-ui': 'POST /ag-ui',
  a2a: 'GET /.well-known/agent-card.json',
};

/**
 * The protocols of `--protocols` (`openai,ai-sdk,ag-ui,a2a`, `all` or `none`); undefined (every one) when the
 * flag is not given. Throws a {@link CliError} for a name it does not know.
 */
export function protocolsOf(flag: string | undefined): readonly ProtocolName[] | undefined {
  if (flag === undefined || flag.trim() === 'all') return undefined;
  if (flag.trim() === 'none') return [];
  const names = items(flag);
  for (const name of names) {
    if (!PROTOCOL_NAMES.includes(name as ProtocolName)) {
      throw new CliError(
        `--protocols: unknown protocol "${name}" (known: ${PROTOCOL_NAMES.join(', ')}, or all, none)`,
      );
    }
  }
  return names as ProtocolName[];
}

/** The line saying which protocols a server speaks besides Lagent's own. */
export function protocolsLine(command: string, protocols: readonly ProtocolName[] | undefined): string {
  const served = protocols ?? PROTOCOL_NAMES;
  if (served.length === 0) return '';
  return `${command}: also speaks ${served.map((name) => `${name} (${PROTOCOL_ROUTES[name]})`).join(', ')}\n`;
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
 * then closes the server (calls in progress finish, and so does the recovery of unfinished calls it began at
 * start) and the agent's tools. A host other than a loopback one
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
      protocols: options.protocols,
      resourceId: loaded.resourceId as HTTPAgentServerOptions['resourceId'],
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
    `lagent serve: ${name}listening on ${url}${options.token ? ' (token required)' : ''}\n${protocolsLine('lagent serve', options.protocols)}`,
  );
  // Calls a previous run left unfinished (it was killed) are recovered while the server answers, each into its
  // run's log (a client that rejoins the run sees the rest).
  const reported = reportRecovery(server.recovery);
  const signal = await stopped;
  process.stderr.write(`lagent serve: ${signal}, shutting down\n`);
  await server.close();
  // Recovered calls are calls in flight too: the agent's store is closed only once they are done (closed in
  // the middle of one, a tool that ran would be left without its result, an outcome unknown to the next run).
  await reported;
}

/**
 * Says on stdout how many calls a killed server left unfinished were recovered at start (on stderr, what failed).
 * A call still held by a process that died is taken over when its lease runs out (`--lease-ms`).
 */
export async function reportRecovery(recovery: Promise<RecoveredRun[]>, command = 'serve'): Promise<void> {
  const runs = await recovery;
  const recovered = runs.filter((run) => run.status === 'done' || run.status === 'waiting');
  const failed = runs.filter((run) => run.error !== undefined);
  if (recovered.length > 0) {
    const sessions = new Set(recovered.map((run) => run.sessionId)).size;
    process.stdout.write(
      `lagent ${command}: recovered ${recovered.length} unfinished call${recovered.length === 1 ? '' : 's'} of ${sessions} session${sessions === 1 ? '' : 's'}\n`,
    );
  }
  for (const run of failed) {
    process.stderr.write(
      `lagent ${command}: recovering ${run.runId ? `call ${JSON.stringify(run.runId)} of ` : ''}session ${JSON.stringify(run.sessionId)} failed: ${messageOf(run.error)}\n`,
    );
  }
}
