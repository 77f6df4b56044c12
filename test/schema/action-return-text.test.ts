import { ActionReturn, ActionStatusCode, actionReturnText } from 'lagent-ts';
import { describe, expect, it } from 'vitest';

describe('ActionReturn.toText', () => {
  it('is the result on success and the error otherwise', () => {
    const ok = new ActionReturn({
      result: [
        { type: 'text', content: '42' },
        { type: 'image', content: '/tmp/a.png' },
      ],
    });
    expect(ok.toText()).toBe('42\n[image](/tmp/a.png)');
    const failed = new ActionReturn({ errmsg: 'boom', state: ActionStatusCode.API_ERROR });
    expect(failed.toText()).toBe('boom');
  });

  it('falls back to the result, then a sentence, when a failed call has no error message', () => {
    const partial = new ActionReturn({
      state: ActionStatusCode.ING,
      result: [{ type: 'text', content: 'so far' }],
    });
    expect(partial.toText()).toBe('so far');
    expect(new ActionReturn({ state: ActionStatusCode.HTTP_ERROR }).toText()).toBe(
      `The tool call failed (state ${ActionStatusCode.HTTP_ERROR}).`,
    );
  });

  it('never throws on malformed result items', () => {
    const odd = new ActionReturn({ result: [{ type: 'json', content: { a: 1n } as never }, null as never] });
    expect(odd.toText()).toBe('[json]({"a":1})');
  });

  it('actionReturnText is the same text', () => {
    const failed = new ActionReturn({ errmsg: 'x', state: ActionStatusCode.ARGS_ERROR });
    expect(actionReturnText(failed)).toBe(failed.toText());
  });
});
