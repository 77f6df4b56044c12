import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { LagentError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import {
  type AgentFactoryContext,
  type AgentFlags,
  type CommandName,
  DEFAULT_MODEL,
  type LoadedAgent,
  loadAgent,
  TOOLS,
} from './agent-source';
import { defaultErrorsPath } from './batch';
import { CliError, messageOf } from './errors';
import { EVAL_HELP } from './eval-help';
import { requirePeers } from './peers';
import { terminalText } from './terminal-text';

/** The package version, for `lagent --version`. */
function version(): string {
  try {
    const url = new URL('../../package.json', import.meta.url);
    return (JSON.parse(readFileSync(url, 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

function integer(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < min || parsed > max) {
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}.`);
    }
    return parsed;
  };
}

function fraction(name: string) {
  return (value: string): number => {
    const parsed = Number(value);
    if (value.trim() === '' || !Number.isFinite(parsed) || parsed < 0 || parsed > 1) {
      throw new InvalidArgumentError(`${name} must be a number from 0 to 1.`);
    }
    return parsed;
  };
}

/** The flags of what callers may set on a call (`serve` and `worker`). */
function withCallerOptions(command: Command): Command {
  return command
    .option(
      '--allow-params <list>',
      'generation parameters callers may set, with bounds: max_new_tokens=1..2048,temperature,top_p=0..1,stop_words=8 (others are ignored)',
    )
    .option(
      '--max-budget <list>',
      'the most one call may spend: tokens=50000,usd=0.5,model_calls=20,tool_calls=50',
    )
    .option('--refuse-out-of-bounds', 'refuse (422) a parameter outside its bounds instead of clamping it');
}

const MODEL_FLAGS = ['model', 'baseUrl', 'apiKey', 'tools', 'system', 'maxTurn'] as const;

/** Adds the flags that say which agent a command drives. */
function withAgentOptions(command: Command): Command {
  return command
    .option(
      '-a, --agent <module>',
      'a module whose default export is an agent, or a function (sync or async) returning one; .ts works under tsx',
    )
    .option(
      '--config <file>',
      'a JSON file describing the agent, as createAgent takes it: {"type": "AsyncFunctionCallingAgent", "llm": {...}, ...}',
    )
    .addOption(
      new Option('-m, --model <name>', 'model name for the built-in agent (OpenAI-compatible API)')
        .env('LAGENT_MODEL')
        .default(DEFAULT_MODEL, `${DEFAULT_MODEL}, or OPENAI_MODEL`),
    )
    .addOption(
      new Option('--base-url <url>', 'API base URL (default https://api.openai.com/v1)').env(
        'OPENAI_BASE_URL',
      ),
    )
    .addOption(new Option('--api-key <key>', 'API key').env('OPENAI_API_KEY'))
    .option(
      '-t, --tools <names>',
      `comma-separated tools for a function-calling agent: ${Object.keys(TOOLS).join(', ')}`,
    )
    .option('-s, --system <prompt>', 'system prompt of the built-in agent')
    .option('--max-turn <n>', 'model turns per call with --tools (default 10)', integer('--max-turn', 1))
    .addOption(
      new Option(
        '--store <url>',
        'keep sessions in a store: sqlite:./sessions.db, redis://..., postgres://... (not worker)',
      ).env('LAGENT_STORE'),
    );
}

/** Adds `--lease-ms` (serve, ui, worker). */
function withLeaseOption(command: Command): Command {
  return command.option(
    '--lease-ms <ms>',
    "how long a session's lease lasts unless renewed (every third of it): a process that died is taken over after this long (default 10000)",
    integer('--lease-ms', 100),
  );
}

/** Adds `--record` and `--replay` (chat and batch). */
function withRecordReplayOptions(command: Command): Command {
  return command
    .option(
      '--record <file>',
      "append every model call (request and answer) to a JSONL file, for --replay later (each agent's llm is recorded)",
    )
    .option(
      '--replay <file>',
      'answer every model call from a file written by --record, without reaching a model; a call not recorded fails',
    );
}

/** The agent flags of a parsed command. */
function agentFlags(command: Command): AgentFlags {
  const options = command.opts<Record<string, unknown>>();
  const modelFlagsGiven = MODEL_FLAGS.some((key) => command.getOptionValueSource(key) === 'cli');
  // An empty value (OPENAI_BASE_URL= in the environment) means not set.
  const text = (key: string) => {
    const value = options[key];
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  return {
    agent: text('agent'),
    config: text('config'),
    // The default stands in for OPENAI_MODEL, which buildAgent reads (commander takes one variable per option).
    model: command.getOptionValueSource('model') === 'default' ? undefined : text('model'),
    baseUrl: text('baseUrl'),
    apiKey: text('apiKey'),
    tools: text('tools'),
    system: text('system'),
    maxTurn: options.maxTurn as number | undefined,
    modelFlagsGiven,
  };
}

async function withAgent(
  command: Command,
  name: CommandName,
  streaming: boolean,
  body: (loaded: LoadedAgent) => Promise<void>,
): Promise<void> {
  const context: AgentFactoryContext = { command: name, streaming };
  const storeUrl = command.opts<{ store?: string }>().store || undefined;
  if (storeUrl !== undefined && name === 'worker') {
    throw new CliError(
      "--store is for chat, serve, batch, eval and ui: a worker keeps its sessions in the queue's Redis",
    );
  }
  let loaded: LoadedAgent;
  try {
    const recording = command.opts<{ record?: string; replay?: string }>();
    const flags = agentFlags(command);
    // A replayed run reaches no model: the built-in agent needs no API key.
    if (recording.replay !== undefined && flags.apiKey === undefined && !process.env.OPENAI_API_KEY) {
      flags.apiKey = 'unused-in-replay';
    }
    loaded = await loadAgent(flags, context);
    if (recording.record !== undefined || recording.replay !== undefined) {
      const { withRecordReplay } = await import('./record-replay');
      try {
        loaded = withRecordReplay(loaded, recording);
      } catch (error) {
        await loaded.close();
        throw error;
      }
    }
    const leaseMs = command.opts<{ leaseMs?: number }>().leaseMs;
    if (leaseMs !== undefined) await withLease(loaded, leaseMs);
    if (storeUrl !== undefined) loaded = await withStore(loaded, storeUrl, leaseMs);
  } catch (error) {
    if (error instanceof LagentError) throw new CliError(error.message, { cause: error });
    throw error;
  }
  try {
    await body(loaded);
  } finally {
    await loaded.close();
  }
}

/**
 * The agent's calls take leases of `leaseMs` on their sessions: its durable calls (unless its `durable` option
 * sets their own), and the calls of a module's agent that keeps its sessions in a store (`memory: { store }`,
 * unless it sets `leaseMs`), whose lease its durable calls share.
 */
async function withLease(loaded: LoadedAgent, leaseMs: number): Promise<void> {
  const [{ AgentBase }, { DURABLE }, { sessionBindingOf }] = await Promise.all([
    import('../agents/agent-base'),
    import('../agents/interceptors/durable/journal'),
    import('../agents/interceptors/session-store/persist'),
  ]);
  if (!(loaded.agent instanceof AgentBase)) return;
  const agent = loaded.agent as unknown as Record<symbol, { leaseMs?: number } | undefined>;
  const durable = agent[DURABLE];
  if (durable !== undefined && durable.leaseMs === undefined) agent[DURABLE] = { ...durable, leaseMs };
  sessionBindingOf(loaded.agent)?.defaultLeaseMs(leaseMs);
}

/** The loaded agent keeping its sessions in the store `url` names; the command's end closes the store. */
async function withStore(loaded: LoadedAgent, url: string, leaseMs?: number): Promise<LoadedAgent> {
  const [{ openStore }, { attachStore }, { AgentBase }] = await Promise.all([
    import('../stores/open-store'),
    import('../agents/interceptors/session-store/persist'),
    import('../agents/agent-base'),
  ]);
  if (!(loaded.agent instanceof AgentBase)) {
    await loaded.close();
    throw new CliError('--store needs an agent of lagent-ts (AgentBase)');
  }
  let store: Awaited<ReturnType<typeof openStore>>;
  try {
    store = await openStore(url);
    attachStore(loaded.agent, { store, leaseMs });
  } catch (error) {
    await loaded.close();
    throw error;
  }
  return {
    agent: loaded.agent,
    resourceId: loaded.resourceId,
    close: async () => {
      try {
        await loaded.close();
      } finally {
        await store.close();
      }
    },
  };
}

function sessionId(value: string): SessionId {
  return /^\d+$/.test(value) ? Number(value) : value;
}

const AGENT_HELP = `
The agent:
  --agent ./my-agent.ts   a module; its default export is an agent, or a function returning one. A function
                          gets { command, streaming } (streaming: true for chat and serve).
  --config agent.json     a JSON agent config, as createAgent builds it: {"type": "AsyncFunctionCallingAgent",
                          "llm": {"type": "AsyncGPTAPI", "model": "gpt-4o-mini"}, "actions": [{"type": ...}]}.
  otherwise               an agent on an OpenAI-compatible API: --model (LAGENT_MODEL, OPENAI_MODEL,
                          default ${DEFAULT_MODEL}), --base-url (OPENAI_BASE_URL), --api-key (OPENAI_API_KEY);
                          with --tools, a function-calling agent offering those tools.

Tools (--tools):
${Object.entries(TOOLS)
  .map(([name, tool]) => `  ${name.padEnd(22)}  ${tool.description}`)
  .join('\n')}

Examples:
  lagent chat --tools python                       chat with gpt-4o-mini and a Python interpreter
  lagent chat --base-url http://127.0.0.1:8000/v1 --model qwen2.5   a local OpenAI-compatible server
  lagent serve --agent ./my-agent.js --port 8090 --token secret
  lagent serve --config agent.json                 an agent described in JSON
  lagent serve --agent ./my-agent.js --store sqlite:./sessions.db   sessions kept across restarts
  lagent worker --agent ./my-agent.js --redis redis://127.0.0.1:6379 --concurrency 4
  lagent batch questions.jsonl -o answers.jsonl --concurrency 8
  lagent batch questions.jsonl -o answers.jsonl --record run.jsonl   record the model calls
  lagent batch questions.jsonl -o replayed.jsonl --replay run.jsonl  the same run, no model reached
  NODE_OPTIONS='--import tsx' lagent chat --agent ./my-agent.ts   a TypeScript agent module

Set LAGENT_DEBUG=1 to see stack traces of errors.`;

/**
 * The `lagent` command line (commander): `chat`, `serve`, `worker`, `batch`, `eval` and `ui`. Errors of the person running it
 * are thrown (commander's as `CommanderError`, after it printed them); see {@link main}.
 */
export function createProgram(): Command {
  const program = new Command('lagent')
    .description(
      'Run lagent-ts agents: chat in the terminal, serve over HTTP, work a queue, run or evaluate a JSONL batch, or watch one on a local page.',
    )
    .version(version(), '-v, --version')
    .exitOverride()
    .showHelpAfterError('(lagent --help lists the commands and flags)')
    .addHelpText('after', AGENT_HELP);

  withRecordReplayOptions(
    withAgentOptions(
      program
        .command('chat')
        .description(
          'a streaming REPL with the agent (/approve, /decline, /pending, /reset, /save FILE, /load FILE, /exit; Ctrl-C stops a reply)',
        ),
    ),
  )
    .option('--session <id>', 'the session id of the conversation', '0')
    .option('--reasoning', "show a reasoning model's thinking, dimmed, before its answer")
    .action(async (_options, command: Command) => {
      const { runChat } = await import('./chat');
      const flags = command.opts<{ session: string; reasoning?: boolean }>();
      const session = sessionId(flags.session);
      await withAgent(command, 'chat', true, (loaded) =>
        runChat(loaded.agent, { sessionId: session, showReasoning: flags.reasoning === true }),
      );
    });

  withLeaseOption(
    withCallerOptions(
      withAgentOptions(
        program
          .command('serve')
          .description(
            "serve the agent over HTTP with Lagent's protocol (POST /chat_completion, GET /memory/:id, ...), OpenAI chat completions, the AI SDK's UI message stream, AG-UI and A2A; a durable agent's calls a killed server left unfinished are recovered at start",
          ),
      ),
    ),
  )
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('-p, --port <port>', 'port (0: a free one)', integer('--port', 0, 65535), 8090)
    .addOption(
      new Option('--token <token>', 'require Authorization: Bearer <token> (needed off loopback)').env(
        'LAGENT_TOKEN',
      ),
    )
    .option('--allowed-hosts <names>', 'comma-separated Host names to accept besides this host and loopback')
    .option('--allowed-origins <origins>', 'comma-separated origins whose web pages may call the server')
    .option(
      '--protocols <names>',
      "protocols served besides Lagent's: comma-separated openai, ai-sdk, ag-ui, a2a, or all, none",
      'all',
    )
    .action(async (_options, command: Command) => {
      const { callerOptionsOf, checkServeOptions, protocolsOf, runServe } = await import('./serve');
      const flags = command.opts<Record<string, string | undefined>>();
      const list = (value: string | undefined) =>
        value
          ?.split(',')
          .map((item) => item.trim())
          .filter(Boolean);
      const options = {
        host: command.opts<{ host: string }>().host,
        port: command.opts<{ port: number }>().port,
        token: flags.token || undefined,
        allowedHosts: list(flags.allowedHosts),
        allowedOrigins: list(flags.allowedOrigins),
        callerOptions: callerOptionsOf(command.opts()),
        protocols: protocolsOf(flags.protocols),
      };
      checkServeOptions(options);
      await requirePeers('serve');
      await withAgent(command, 'serve', true, (loaded) => runServe(loaded, options));
    });

  withLeaseOption(
    withCallerOptions(
      withAgentOptions(program.command('worker').description('host the agent on a BullMQ queue (Redis)')),
    ),
  )
    .addOption(new Option('--redis <url>', 'Redis URL').env('REDIS_URL').default('redis://127.0.0.1:6379'))
    .option('-q, --queue <name>', 'queue name', 'agents')
    .option('-c, --concurrency <n>', 'calls at once (on different sessions)', integer('--concurrency', 1), 1)
    .action(async (_options, command: Command) => {
      const { runWorker } = await import('./worker');
      const { callerOptionsOf } = await import('./serve');
      const flags = command.opts<{ redis: string; queue: string; concurrency: number; leaseMs?: number }>();
      const options = { ...flags, callerOptions: callerOptionsOf(command.opts()) };
      await requirePeers('worker');
      await withAgent(command, 'worker', false, (loaded) => runWorker(loaded, options));
    });

  withRecordReplayOptions(
    withAgentOptions(
      program
        .command('batch')
        .description(
          'run the agent on each line of a JSONL file ({"id": ..., "message": ...}); resumable: ids already in the output are skipped; a line whose reply is an interrupt waits: give its input line "decisions" and run again',
        )
        .argument('<input>', 'input JSONL file'),
    ),
  )
    .requiredOption('-o, --output <file>', 'output JSONL file, appended to: {"id", "message"} per answer')
    .option(
      '-e, --errors <file>',
      'failures, one JSON line each (default: the output name with .errors.jsonl)',
    )
    .option('-c, --concurrency <n>', 'lines in flight at once', integer('--concurrency', 1), 4)
    .option('--no-progress', 'no progress bar or progress lines')
    .addHelpText(
      'after',
      `
Each output line is {"id": ..., "message": <the reply, Lagent's JSON shape>}; each line runs on its own
session (its id). A line whose reply is an interrupt (a tool call waiting for approval) is recorded as
{"id", "message", "interrupts", "state"} and counted as waiting; a later run continues it when its input line
has "decisions": [{"id", "approve", ...}]. Failures, malformed lines and duplicate ids go to the errors file
(rewritten by each run; failed lines run again next time). Exit code: 0 when every line succeeded or waits,
2 when some failed, 130 when stopped.`,
    )
    .action(async (input: string, _options, command: Command) => {
      const { runBatch } = await import('./batch');
      const options = command.opts<{
        output: string;
        errors?: string;
        concurrency: number;
        progress: boolean;
      }>();
      await withAgent(command, 'batch', false, async (loaded) => {
        const controller = new AbortController();
        const stop = () => controller.abort();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        try {
          const summary = await runBatch(loaded.agent, {
            input,
            output: options.output,
            errors: options.errors ?? defaultErrorsPath(options.output),
            concurrency: options.concurrency,
            progress: options.progress,
            signal: controller.signal,
          });
          if (summary.interrupted) process.exitCode = 130;
          else if (summary.failed > 0) process.exitCode = 2;
        } finally {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
        }
      });
    });

  withRecordReplayOptions(
    withAgentOptions(
      program
        .command('eval')
        .description(
          'run the agent on each line of a JSONL data file, score each reply, and sum up accuracy, tokens, cost and latency; resumable',
        )
        .argument('<data>', 'data JSONL file: {"input": ..., "expected": ...} per line'),
    ),
  )
    .option(
      '--scorer <scorer>',
      'exact, includes, or a module exporting (reply, expected, line) => score; repeat for several',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option('--judge <rubric>', 'an LLM judge scores each reply against this rubric (its text, or @file)')
    .option('--judge-model <model>', "the judge's model (default: the agent's --model)")
    .option('--judge-base-url <url>', "the judge's OpenAI-compatible API (default: the agent's --base-url)")
    .option('--judge-api-key <key>', "the judge's API key (default: the agent's --api-key)")
    .option(
      '--threshold <accuracy>',
      'exit 1 when the accuracy is below it: 0.8 (the first scorer) or name=0.8; repeat for several',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option(
      '--pass-score <score>',
      'an item with a score below it failed (listed, and in --junit)',
      fraction('--pass-score'),
      1,
    )
    .option('--compare <results>', 'an earlier results file: what got better or worse, item by item')
    .option('--junit <file>', 'write a JUnit XML report (one test case per item) for CI')
    .option('--show-failures <n>', 'failed items listed with their diff', integer('--show-failures', 0), 10)
    .option('-o, --output <file>', 'results JSONL file, appended to (resumable)', 'results.jsonl')
    .option('-c, --concurrency <n>', 'items in flight at once', integer('--concurrency', 1), 4)
    .option('--summary-json <file>', 'also write the JSON summary to this file')
    .option('--no-progress', 'no progress bar or progress lines')
    .addHelpText('after', EVAL_HELP)
    .action(async (data: string, _options, command: Command) => {
      const { prepareEval } = await import('./eval-command');
      const options = command.opts<{
        scorer?: string[];
        judge?: string;
        judgeModel?: string;
        judgeBaseUrl?: string;
        judgeApiKey?: string;
        threshold?: string[];
        passScore: number;
        compare?: string;
        junit?: string;
        showFailures: number;
        output: string;
        concurrency: number;
        summaryJson?: string;
        progress: boolean;
      }>();
      const flags = agentFlags(command);
      const run = await prepareEval(data, {
        ...options,
        model: flags.model,
        baseUrl: flags.baseUrl,
        apiKey: flags.apiKey,
      });
      await withAgent(command, 'eval', false, (loaded) => run(loaded.agent));
    });

  withLeaseOption(
    withAgentOptions(
      program
        .command('ui')
        .description(
          'a local web page to watch and drive the agent: streamed chat, its tree live, interrupts, sessions, memories',
        ),
    ),
  )
    .option('-p, --port <port>', 'port on 127.0.0.1 (0: a free one)', integer('--port', 0, 65535), 8091)
    .addOption(
      new Option(
        '--token <token>',
        "the page's secret, needed by every request (default: a new one at each start; the printed URL carries it)",
      ).env('LAGENT_TOKEN'),
    )
    .option('--allowed-hosts <names>', 'comma-separated Host names to accept besides 127.0.0.1 and localhost')
    .option(
      '--protocols <names>',
      "protocols served besides Lagent's: comma-separated openai, ai-sdk, ag-ui, a2a, or all, none",
      'all',
    )
    .action(async (_options, command: Command) => {
      const { runUi } = await import('./ui');
      const { protocolsOf } = await import('./serve');
      const flags = command.opts<{
        port: number;
        token?: string;
        allowedHosts?: string;
        protocols?: string;
      }>();
      const options = {
        protocols: protocolsOf(flags.protocols),
        port: flags.port,
        token: flags.token || undefined,
        allowedHosts: flags.allowedHosts
          ?.split(',')
          .map((item) => item.trim())
          .filter(Boolean),
      };
      await requirePeers('ui');
      await withAgent(command, 'ui', true, (loaded) => runUi(loaded, options));
    });

  return program;
}

/**
 * Runs the `lagent` command line with `argv` (`process.argv`'s shape: node, script, arguments...) and resolves
 * with the exit code. User errors print one line on stderr (a stack only with `LAGENT_DEBUG=1`).
 */
export async function main(argv: readonly string[] = process.argv): Promise<number> {
  process.exitCode = undefined;
  const program = createProgram();
  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    const debug = process.env.LAGENT_DEBUG === '1';
    // A message may quote what a model or a server sent: shown without the escape sequences it could carry.
    process.stderr.write(`lagent: ${terminalText(messageOf(error))}\n`);
    if (debug && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
    return error instanceof CliError ? error.exitCode : 1;
  }
}
