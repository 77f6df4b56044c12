import type { AgentBase } from '../agents/agent-base';
import { callsRemote } from '../agents/interceptors/durable/in-process';
import { pathIn } from '../agents/lifecycle/events';

export { REMOTE_AGENT } from '../agents/interceptors/durable/in-process';

import type { ResumeDecisions } from '../agents/interceptors/approvals/decisions';
import { RESUME } from '../agents/interceptors/slots';
import { type CallFrame, currentFrame, rootFrame } from '../core/call-context';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import { InterruptSignal, interruptsOf, resumeWith } from '../schema/interrupts';

/*
 * A remote agent's interrupts in the local agent tree. A client (HTTP or queue) called inside a local agent's
 * `forward` stands in that tree at the calling agent's path, then the property that holds it (its name when
 * no property does): `team.remote`. When the remote agent replies with an interrupt, the client throws it
 * up the local tree re-rooted there, so the outermost local call returns it with `path` `team.remote` joined
 * with the remote's own path and the id made from that path (`team.remote.worker:call_1`). A local id of that
 * shape is the remote's id after the client's path and one separator, so when the outermost local call is
 * resumed, the client finds the decisions under its path in the call's frame, takes the prefix off, and
 * sends the remote a resume message of its own ids. Called outside any agent call, the client returns the
 * remote's interrupt reply as it is.
 */

/** Where a client called here stands in the local tree, or undefined outside any agent call. */
export interface RemotePlace {
  frame: CallFrame;
  /** The agent whose `forward` called the client. */
  owner: object;
  /** The client's key under that agent: the property that holds it, else its name. */
  key: string;
  /** The client's dotted path from the outermost local agent. */
  path: string;
}

/** Where `client` stands in the tree of the agent call running here (undefined outside any call). */
export function remotePlace(client: object, name: string): RemotePlace | undefined {
  const frame = currentFrame();
  if (frame === undefined) return undefined;
  const owner = frame.owner;
  const root = rootFrame(frame)!.owner;
  const ownerPath = owner === root ? '' : (pathIn(root as AgentBase, owner as AgentBase) ?? '');
  const holder = owner as Record<string, unknown>;
  const key = Object.keys(holder).find((property) => holder[property] === client) ?? name;
  return { frame, owner, key, path: ownerPath === '' ? key : `${ownerPath}.${key}` };
}

/** The resumed calls a client has answered already: one resume message goes to the remote per local resume. */
const answered = new WeakMap<ResumeDecisions, Set<string>>();

/**
 * The input a client sends: a resume message of the remote's ids when the local call chain was resumed with
 * decisions under the client's path (not yet sent by this client), else `input` as it is. The decisions given
 * now must then all be the remote's: one pause is answered by one resume message.
 */
export function remoteInput<T extends MessageInput | readonly MessageInput[] | undefined>(
  place: RemotePlace | undefined,
  input: T,
): T | AgentMessage {
  if (place === undefined) return input;
  // The caller's tree may now stop for a remote's questions: its calls journal in process (in-process-journal.ts).
  callsRemote(place.owner);
  const prefix = place.path;
  const resume = place.frame?.find(RESUME);
  if (resume === undefined) return input;
  const done = answered.get(resume);
  if (done?.has(prefix)) return input;
  const owner = (place.owner as { name?: unknown }).name;
  const decisions = resume.forRemote(prefix, typeof owner === 'string' ? owner : prefix);
  if (decisions.length === 0) return input;
  if (done === undefined) answered.set(resume, new Set([prefix]));
  else done.add(prefix);
  return resumeWith(decisions);
}

/**
 * The remote reply, unless it is an interrupt and the client was called inside an agent: then the
 * interrupts are thrown up the local tree, re-rooted at the client's place.
 */
export function throwIfInterrupted<R extends AgentMessage>(place: RemotePlace | undefined, reply: R): R {
  if (place === undefined) return reply;
  const interrupts = interruptsOf(reply);
  if (interrupts.length === 0) return reply;
  throw new InterruptSignal(
    interrupts.map((interrupt) => ({
      agent: place.owner,
      toolCall: interrupt.toolCall,
      path: interrupt.path === '' ? place.key : `${place.key}.${interrupt.path}`,
      kind: interrupt.kind,
    })),
  );
}
