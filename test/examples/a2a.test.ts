import { fileURLToPath } from 'node:url';
import { Agent, type AgentMessage, type ForwardOptions, interruptsOf, resumeWith } from 'lagent-ts';
import { A2AAgent, HTTPAgentError } from 'lagent-ts/distributed';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadyProcess, runProcess, startProcess } from '../helpers/processes';

/*
 * examples/a2a: a lagent-ts agent calling an A2A agent built with the SDK alone, and the SDK's client calling a
 * lagent-ts agent; and the sync A2AAgent (its async twin in the sync bridge) against the SDK's agent in another
 * process, inside a sync composite.
 */

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('examples/a2a', () => {
  it('lagent-ts calls the SDK agent (a pause resumed with the text it asked for); the SDK client calls lagent-ts', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    const { code, stdout, stderr } = await runProcess(
      process.execPath,
      ['--import', 'tsx', 'examples/a2a/index.ts'],
      {
        cwd: root,
        env,
        timeoutMs: 60_000,
      },
    );
    expect(stderr).not.toMatch(/Error|at .+:\d+:\d+/);
    expect(code).toBe(0);
    expect(stdout).toContain('remote card: Currency Agent (convert)');
    expect(stdout).toContain('reply: The currency agent says: 100 EUR is 108.00 USD');
    expect(stdout).toContain('paused at currency: reply({"question":"How many euros?"})');
    expect(stdout).toContain('resumed: The currency agent says: 250 EUR is 270.00 USD');
    expect(stdout).toContain('served card: weather-assistant (skills: weather-assistant, Weather)');
    expect(stdout).toContain('task completed: It is sunny in Lisbon.');
    expect(stdout).toMatch(/streamed: It is sunny in Porto\. \(\d+ artifact updates?\)/);
  }, 70_000);
});

describe('A2AAgent (sync) against the SDK agent in another process', () => {
  let remote: ReadyProcess;
  let url: string;
  beforeAll(async () => {
    remote = await startProcess(
      process.execPath,
      ['--import', 'tsx', 'examples/a2a/sdk-agent.ts'],
      /currency agent at/,
      {
        cwd: root,
        timeoutMs: 30_000,
      },
    );
    url = /(http:\/\/\S+)/.exec(remote.line)![1]!;
  }, 40_000);
  afterAll(() => remote?.stop());

  class Trip extends Agent {
    readonly currency: A2AAgent<string>;
    constructor(to: string) {
      super({ name: 'trip' });
      this.currency = new A2AAgent<string>({ url: to, name: 'currency' });
    }
    override forward(messages: AgentMessage[], options: ForwardOptions) {
      return `converted: ${this.currency.call(messages, { sessionId: options.sessionId }).content}`;
    }
  }

  it('calls, pauses as an interrupt of the sync tree, resumes; an unreachable server is an HTTPAgentError', () => {
    const trip = new Trip(url);
    try {
      expect(trip.call('12 euros', { sessionId: 'a' }).content).toBe('converted: 12 EUR is 12.96 USD');
      const paused = trip.call('my savings', { sessionId: 'b' });
      const [ask] = interruptsOf(paused);
      expect(ask).toMatchObject({
        path: 'currency',
        toolCall: { name: 'reply', arguments: { question: 'How many euros?' } },
      });
      const done = trip.call(resumeWith([{ id: ask!.id, approve: true, arguments: { text: '5' } }]), {
        sessionId: 'b',
      });
      expect(done.content).toBe('converted: 5 EUR is 5.40 USD');
    } finally {
      trip.currency.close();
    }
    const gone = new A2AAgent({ url: 'http://127.0.0.1:9', timeout: 5_000 });
    try {
      expect(() => gone.call('hi')).toThrow(HTTPAgentError);
    } finally {
      gone.close();
    }
  }, 40_000);
});
