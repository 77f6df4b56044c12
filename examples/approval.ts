/**
 * Tool approval: a function-calling agent whose `DeleteFile` tool needs a person's approval. The call
 * pauses before the tool runs and returns an interrupt; the session is saved to JSON (`stateDict`), loaded
 * into a fresh agent (as another process would), and resumed there: once declined with a reason (the file
 * stays, the model reads why), once approved (the file goes). The files live in a temporary directory that
 * the example removes at the end. On a real endpoint (OPENAI_API_KEY / OPENAI_BASE_URL) the model decides the calls.
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type AgentMessage,
  AsyncFunctionCallingAgent,
  type Decision,
  interruptsOf,
  resumeWith,
  tool,
} from 'lagent-ts';
import type { MockResponses } from 'lagent-ts/testing';
import { z } from 'zod';
import { describeModel, pickAsyncLLM } from './shared/model';
import { heading, isMain } from './shared/print';

/**
 * What the mock model does: ask to delete `old.log`; after the tool's answer, say what happened (the
 * answer of a declined call says so, with the reason).
 */
const script: MockResponses = (messages) => {
  const last = messages.at(-1)!;
  if (last.role !== 'tool') return { toolCalls: [{ name: 'DeleteFile', arguments: { name: 'old.log' } }] };
  const answer = String(last.content);
  return answer.includes('declined')
    ? `I left old.log in place. ${answer}`
    : 'Deleted old.log; notes.txt is still there.';
};

/** A fresh agent over `dir`: the same tools and model, nothing in memory. */
function makeAgent(dir: string): AsyncFunctionCallingAgent {
  const listFiles = tool({
    name: 'ListFiles',
    description: 'Lists the files of the working directory',
    parameters: z.object({}),
    run: () => readdirSync(dir).sort().join(', '),
  });
  const deleteFile = tool({
    name: 'DeleteFile',
    description: 'Deletes a file of the working directory',
    parameters: z.object({ name: z.string() }),
    // Every deletion waits for a person to approve it.
    needsApproval: true,
    run: ({ name }) => {
      unlinkSync(join(dir, name.replace(/[/\\]/g, '')));
      return `deleted ${name}`;
    },
  });
  return new AsyncFunctionCallingAgent({
    llm: pickAsyncLLM(script),
    actions: [listFiles, deleteFile],
    template: 'You tidy up the working directory. Delete only what the user asks for.',
  });
}

export async function main(): Promise<void> {
  heading('Tool approval: pause, save, resume in a fresh agent', describeModel());
  const root = mkdtempSync(join(tmpdir(), 'lagent-approval-'));
  const dir = join(root, 'files');
  mkdirSync(dir);
  try {
    writeFileSync(join(dir, 'notes.txt'), 'keep me');
    writeFileSync(join(dir, 'old.log'), 'stale');
    console.log(`files: ${readdirSync(dir).sort().join(', ')}`);

    const agent = makeAgent(dir);
    const reply = await agent.call('Please delete old.log.', { sessionId: 'tidy' });
    const interrupts = interruptsOf(reply);
    if (interrupts.length === 0) {
      console.log(`the model answered without asking for a deletion: ${String(reply.content)}`);
      return;
    }
    console.log(`paused (reply type: ${reply.type}); waiting for approval of:`);
    for (const ask of interrupts) {
      console.log(
        `  ${ask.id}: ${ask.toolCall.name}(${JSON.stringify(ask.toolCall.arguments)}) at path '${ask.path}'`,
      );
    }
    console.log(`files while paused: ${readdirSync(dir).sort().join(', ')}`);
    const saved = join(root, 'session.json');
    writeFileSync(saved, JSON.stringify(agent.stateDict('tidy')));
    console.log(`saved the paused session to ${saved}`);

    heading('Declined, with a reason, in a fresh agent');
    await resume(
      dir,
      saved,
      interrupts.map((ask) => ({ id: ask.id, approve: false, reason: 'keep it until Friday' })),
    );
    heading('Approved, in another fresh agent');
    await resume(
      dir,
      saved,
      interrupts.map((ask) => ({ id: ask.id, approve: true })),
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Loads the saved session into a fresh agent and resumes it with `decisions`. */
async function resume(dir: string, saved: string, decisions: Decision[]): Promise<void> {
  const agent = makeAgent(dir);
  agent.loadStateDict(JSON.parse(readFileSync(saved, 'utf8')), 'tidy');
  const reply = await agent.call(resumeWith(decisions), { sessionId: 'tidy' });
  console.log(`decisions: ${JSON.stringify(decisions)}`);
  console.log(`answer: ${String(reply.content)}`);
  for (const message of agent.agent.memory!.get('tidy')!.getMemory()) console.log(`  ${describe(message)}`);
  console.log(`files now: ${readdirSync(dir).sort().join(', ')}`);
}

/** One line per turn of the tool loop. */
function describe(message: AgentMessage): string {
  if (Array.isArray(message.content)) {
    return `[${message.sender}] ${message.content.map((result: { toText(): string }) => result.toText()).join(' | ')}`;
  }
  const calls = (message.formatted as { toolCalls?: { name: string; arguments: unknown }[] } | null)
    ?.toolCalls;
  if (calls?.length) {
    return `[${message.sender}] calls ${calls.map((call) => `${call.name}(${JSON.stringify(call.arguments)})`).join(', ')}`;
  }
  return `[${message.sender}] ${String(message.content)}`;
}

if (isMain(import.meta.url)) await main();
