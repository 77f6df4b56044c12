import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ActionBase, ChatMessage } from 'lagent-ts';
import {
  AgentForInternLM,
  LAGENT_INTERPRETER_CN,
  LAGENT_MATH_CODER_TEMPLATE,
  LAGENT_META_CN,
  LAGENT_PLUGIN_CN,
  LAGENT_REACT_FINISH_FORMAT,
  LAGENT_REACT_FUNCTION_FORMAT,
  LAGENT_REACT_OUTPUT_FORMAT,
  LAGENT_REACT_TEMPLATE,
  MathCoder,
  ReAct,
  tool,
} from 'lagent-ts';
import { MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { calculator, fakePython } from '../helpers/tools';

// test/interop/lagent_prompts.py reads Python Lagent's source and runs the parts of it that build prompts
// (its docstring says which). Where that source is: LAGENT_SOURCE (a checkout or a bare git repository),
// else the mirror this project's machines keep.
const SOURCE = process.env.LAGENT_SOURCE ?? '/work/.mirror/InternLM+lagent/repo';
const SCRIPT = fileURLToPath(new URL('./lagent_prompts.py', import.meta.url));

function skipReason(): string | undefined {
  if (!existsSync(SOURCE)) return `Lagent's source is not at ${SOURCE} (set LAGENT_SOURCE)`;
  const probe = spawnSync('python3', ['-c', 'print(1)'], { encoding: 'utf8' });
  if (probe.stdout?.trim() !== '1') return 'python3 is not on PATH';
  return undefined;
}

const SKIP = skipReason();
if (SKIP) {
  console.warn(
    `lagent-prompts-python.test.ts: SKIPPED — ${SKIP}, so the prompts are not compared with Lagent's`,
  );
}

interface LagentAnswer {
  constants: Record<string, string>;
  internlm: ChatMessage[];
  math_coder: ChatMessage[];
  react: string | null;
  react_formats: { function_format: string; finish_format: string } | null;
  missing: string | null;
}

/** A tool whose description and parameters are not ASCII, as Lagent's users write them. */
const search = tool({
  name: 'search',
  description: '搜索网页 — 返回 “标题” 和链接 😀',
  parameters: z.object({ query: z.string().describe('查询词'), top_k: z.number().int().optional() }),
  run: () => 'ok',
});

function asData(actions: readonly ActionBase[]) {
  return actions.map((action) => ({
    name: action.name,
    is_toolkit: action.isToolkit,
    description: action.description,
  }));
}

let cached: LagentAnswer | undefined;
function lagent(): LagentAnswer {
  if (cached) return cached;
  const actions = [search, calculator];
  const run = spawnSync('python3', [SCRIPT], {
    input: JSON.stringify({ source: SOURCE, plugins: asData(actions), actions: asData(actions) }),
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (run.status !== 0) throw new Error(`lagent_prompts.py failed: ${run.stderr}`);
  cached = JSON.parse(run.stdout) as LagentAnswer;
  return cached;
}

function systemMessages(llm: MockLLM): ChatMessage[] {
  return llm.calls[0]!.messages.filter((message) => message.role === 'system');
}

describe.skipIf(SKIP !== undefined)("Lagent's default prompts, read from Lagent's source", () => {
  it('the LAGENT_* constants are its texts, character for character', () => {
    const { constants, react_formats, missing } = lagent();
    expect(LAGENT_META_CN).toBe(constants.META_CN);
    expect(LAGENT_PLUGIN_CN).toBe(constants.PLUGIN_CN);
    expect(LAGENT_INTERPRETER_CN).toBe(constants.INTERPRETER_CN);
    expect(LAGENT_MATH_CODER_TEMPLATE).toBe(constants.MATH_CODER);
    expect(LAGENT_REACT_TEMPLATE).toBe(constants.REACT_TEMPLATE);
    expect(LAGENT_REACT_OUTPUT_FORMAT).toBe(constants.REACT_OUTPUT_FORMAT);
    if (react_formats === null) {
      console.warn(`lagent-prompts-python.test.ts: ReAct's rendered formats not compared — ${missing}`);
      return;
    }
    expect(LAGENT_REACT_FUNCTION_FORMAT).toBe(react_formats.function_format);
    expect(LAGENT_REACT_FINISH_FORMAT).toBe(react_formats.finish_format);
  });

  it("AgentForInternLM with compat: 'lagent' sends the system messages Lagent's MixedToolParser builds", () => {
    const llm = new MockLLM({ responses: ['好的'] });
    new AgentForInternLM({
      llm,
      plugins: [search, calculator],
      interpreter: fakePython,
      compat: 'lagent',
    }).call('你好');
    expect(systemMessages(llm)).toEqual(lagent().internlm);
  });

  it("MathCoder with compat: 'lagent' sends Lagent's instruction as it renders it (\\boxed{})", () => {
    const llm = new MockLLM({ responses: ['42'] });
    new MathCoder({ llm, interpreter: fakePython, compat: 'lagent' }).call('6 * 7?');
    expect(systemMessages(llm)).toEqual(lagent().math_coder);
  });

  it("ReAct with compat: 'lagent' sends the system prompt Lagent's ReAct.__init__ builds for the same tools", () => {
    const answer = lagent();
    if (answer.react === null) {
      console.warn(`lagent-prompts-python.test.ts: ReAct's prompt not compared — ${answer.missing}`);
      return;
    }
    const llm = new MockLLM({ responses: ['{"thought_process": "知道了", "conclusion": "3"}'] });
    new ReAct({ llm, actions: [search, calculator], compat: 'lagent' }).call('1 + 2?');
    const [system] = systemMessages(llm);
    expect(system!.content).toBe(answer.react);
  });
});
