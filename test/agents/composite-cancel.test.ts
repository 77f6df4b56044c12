import {
  type AgentMessage,
  AsyncAgent,
  AsyncBaseLLM,
  AsyncFunctionCallingAgent,
  asyncTool,
  type ChatMessage,
  GuardrailTripped,
  guardrail,
  type LLMCallParams,
  type ModelReply,
} from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/*
 * A composite call that fails cancels the sub-calls still running inside it: they are aborted through the
 * signal they inherit, and a tool they reach afterwards does not start.
 */

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** A model that answers with a booking once released, whatever its signal says (a slow API that ignores aborts). */
class HeldModel extends AsyncBaseLLM {
  readonly release = deferred();
  readonly asked = deferred<AbortSignal | undefined>();
  calls = 0;

  async chat(): Promise<string> {
    return 'booked';
  }

  override async generate(_messages: ChatMessage[], params?: LLMCallParams): Promise<ModelReply> {
    this.calls++;
    if (this.calls > 1) return { content: 'booked', toolCalls: [] };
    this.asked.resolve(params?.signal);
    await this.release.promise;
    return { content: '', toolCalls: [{ id: 'b1', name: 'Book', arguments: { what: 'hotel' } }] };
  }
}

function bookingTool(bookings: string[]) {
  return asyncTool({
    name: 'Book',
    parameters: z.object({ what: z.string() }),
    run: async ({ what }) => {
      bookings.push(what);
      return 'booked';
    },
  });
}

/** A trip planner asking two agents at once; `failing` fails while `held` is still waiting for its model. */
function planner(
  failing: AsyncAgent,
  held: AsyncFunctionCallingAgent,
  hooks: AsyncAgent['hooks'][number][] = [],
) {
  class Planner extends AsyncAgent {
    flights = failing;
    hotels = held;
    override async forward(messages: AgentMessage[], options: { sessionId: string | number }) {
      const [a, b] = await Promise.all([
        this.flights.call(messages, { sessionId: options.sessionId }),
        this.hotels.call(messages, { sessionId: options.sessionId }),
      ]);
      return `${String(a.content)} / ${String(b.content)}`;
    }
  }
  return new Planner({ name: 'planner', hooks });
}

describe('a failed composite cancels its in-flight sub-calls', () => {
  it('a sub-call that threw: the other is aborted through its signal and its tool does not start', async () => {
    const bookings: string[] = [];
    const model = new HeldModel();
    const hotels = new AsyncFunctionCallingAgent({
      llm: model,
      actions: [bookingTool(bookings)],
      name: 'hotels',
    });
    const ended = deferred<unknown>();
    // The hotels agent's own call (its model-facing sub-agent reports here too, with its path).
    hotels.events.on('error', ({ error, path }) => path === '' && ended.resolve(error));
    hotels.events.on('callEnd', ({ path }) => path === '' && ended.resolve('finished'));
    const flightsModel = new (class extends AsyncBaseLLM {
      async chat(): Promise<string> {
        await model.asked.promise; // fail once the other sub-call is waiting for its model
        throw new Error('flights API down');
      }
    })();
    const trip = planner(new AsyncAgent({ llm: flightsModel, name: 'flights' }), hotels);
    await expect(trip.call('Paris, May 3', { sessionId: 1 })).rejects.toThrow(/flights API down/);
    const signal = await model.asked.promise;
    expect(signal?.aborted).toBe(true);
    model.release.resolve();
    expect(await ended.promise).not.toBe('finished');
    expect(bookings).toEqual([]);
    expect(hotels.memory!.get(1)?.length ?? 0).toBe(0);
  });

  it('a guardrail that tripped on the composite: the sub-call still running books nothing', async () => {
    const bookings: string[] = [];
    const model = new HeldModel();
    const hotels = new AsyncFunctionCallingAgent({
      llm: model,
      actions: [bookingTool(bookings)],
      name: 'hotels',
    });
    const ended = deferred<unknown>();
    // The hotels agent's own call (its model-facing sub-agent reports here too, with its path).
    hotels.events.on('error', ({ error, path }) => path === '' && ended.resolve(error));
    hotels.events.on('callEnd', ({ path }) => path === '' && ended.resolve('finished'));
    const verdict = deferred<string | undefined>();
    const trip = planner(
      new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['flight AF1'] }), name: 'flights' }),
      hotels,
      [guardrail({ name: 'policy', on: 'input', parallel: true, check: () => verdict.promise })],
    );
    const call = trip.call('Paris, May 3', { sessionId: 1 });
    await model.asked.promise;
    verdict.resolve('travel is frozen');
    await expect(call).rejects.toBeInstanceOf(GuardrailTripped);
    model.release.resolve();
    expect(await ended.promise).not.toBe('finished');
    expect(bookings).toEqual([]);
  });

  it('a composite that succeeds leaves nothing aborted', async () => {
    const bookings: string[] = [];
    const model = new HeldModel();
    const hotels = new AsyncFunctionCallingAgent({
      llm: model,
      actions: [bookingTool(bookings)],
      name: 'hotels',
    });
    const trip = planner(
      new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['flight AF1'] }), name: 'flights' }),
      hotels,
    );
    const call = trip.call('Paris, May 3', { sessionId: 1 });
    const signal = await model.asked.promise;
    model.release.resolve();
    expect((await call).content).toBe('flight AF1 / booked');
    expect(bookings).toEqual(['hotel']);
    expect(signal?.aborted ?? false).toBe(false);
  });
});
