import { type FakeOpenAIServer, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from './helpers';

/**
 * `lagent serve --allow-params / --max-budget`: what callers may set, against a real OpenAI-compatible server
 * (the fake one): the model request stays the operator's, allowed parameters are kept within their bounds.
 */

let fake: FakeOpenAIServer;
beforeAll(async () => {
  fake = await startFakeOpenAI({ script: () => 'fine' });
});
afterAll(() => fake?.close());

async function post(base: string, body: Record<string, unknown>) {
  const response = await fetch(`${base}/chat_completion`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

describe('lagent serve: what callers may set', () => {
  it('--allow-params bounds the parameters it names; the rest of a body changes nothing', async () => {
    const cli = await startCli(
      [
        'serve',
        '--model',
        'operator-model',
        '--base-url',
        fake.baseURL,
        '--api-key',
        'sk-operator',
        '--port',
        '0',
        '--allow-params',
        'max_new_tokens=..300, temperature=0..1.5, stop_words=2',
      ],
      /listening on http:/,
    );
    try {
      const base = /(http:\/\/\S+)/.exec(cli.line)![1]!;
      const answer = await post(base, {
        message: ['hi'],
        session_id: 'a',
        max_new_tokens: 999_999,
        temperature: 9,
        model: 'gpt-4-32k-expensive',
        extra_body: { model: 'gpt-4-32k-expensive', n: 128 },
        tools: [{ type: 'function', function: { name: 'transfer', parameters: { type: 'object' } } }],
      });
      expect(answer.status).toBe(200);
      const request = fake.requests.at(-1)!;
      expect(request.headers.authorization).toBe('Bearer sk-operator');
      expect(request.body).toMatchObject({ model: 'operator-model', max_tokens: 300, temperature: 1.5 });
      expect(request.body).not.toHaveProperty('n');
      expect(request.body).not.toHaveProperty('tools');
      expect((await post(base, { message: ['hi'], stop_words: ['a', 'b', 'c'] })).status).toBe(422);
    } finally {
      expect(await cli.stop('SIGTERM')).toBe(0);
    }
  });

  it('--max-budget holds for every call', async () => {
    const cli = await startCli(
      ['serve', '--model', 'm', '--base-url', fake.baseURL, '--port', '0', '--max-budget', 'model_calls=0'],
      /listening on http:/,
    );
    try {
      const base = /(http:\/\/\S+)/.exec(cli.line)![1]!;
      const before = fake.requests.length;
      const answer = await post(base, { message: ['hi'], budget: { model_calls: 10 } });
      expect(answer.status).toBe(422);
      expect(answer.json).toMatchObject({ error: 'BudgetExceededError', limit: 0 });
      expect(fake.requests.length).toBe(before);
    } finally {
      expect(await cli.stop('SIGTERM')).toBe(0);
    }
  });

  it('refuses flags it cannot read', async () => {
    for (const [flag, value, pattern] of [
      ['--allow-params', 'model', /unknown parameter "model"/],
      ['--allow-params', 'temperature=hot..2', /no number/],
      ['--allow-params', 'temperature=1', /min..max/],
      ['--allow-params', 'top_p=1..0', /min \(1\) is above max \(0\)/],
      ['--max-budget', 'dollars=5', /--max-budget/],
    ] as const) {
      const result = await runCli([
        'serve',
        '--model',
        'm',
        '--base-url',
        fake.baseURL,
        '--port',
        '0',
        flag,
        value,
      ]);
      expect(result.code, `${flag} ${value}`).toBe(1);
      expect(result.stderr).toMatch(pattern);
    }
  }, 60_000);
});
