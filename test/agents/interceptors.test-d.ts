import {
  Agent,
  type AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  type ModelReply,
  type StepsInterceptor,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expectTypeOf, it } from 'vitest';

describe('interceptors written inline get their types from the agent', () => {
  it("an async agent's plain hooks get promises from next()", () => {
    new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['x'] }) }).use({
      name: 'log',
      async modelCall(ctx, next) {
        expectTypeOf(ctx.messages).toBeArray();
        expectTypeOf(next()).toEqualTypeOf<Promise<ModelReply>>();
        return next();
      },
    });
    new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({ responses: ['x'] }),
      actions: [],
      interceptors: [
        {
          name: 'tools',
          async toolCall(ctx, next) {
            expectTypeOf(ctx.toolCall.name).toBeString();
            return next();
          },
        },
      ],
    });
  });

  it("a sync agent's plain hooks get the result itself", () => {
    new Agent({
      llm: new MockLLM({ responses: ['x'] }),
      interceptors: [
        {
          name: 'measure',
          agentCall(_ctx, next) {
            expectTypeOf(next()).toEqualTypeOf<AgentMessage>();
            return next();
          },
        },
      ],
    });
  });

  it('steps serve both, marked steps: true', () => {
    const steps: StepsInterceptor = {
      name: 'count',
      steps: true,
      *agentCall(_ctx, next) {
        return yield* next();
      },
    };
    new Agent({ interceptors: [steps] });
    new AsyncAgent().use(steps);
    new AsyncAgent().use({
      name: 'inline steps',
      steps: true,
      *toolCall(_ctx, next) {
        return yield* next();
      },
    });
  });
});
