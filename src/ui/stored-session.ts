import type { AgentBase } from '../agents/agent-base';
import { sessionBindingOf } from '../agents/interceptors/session-store/persist';
import { driveAsync } from '../core/steps';
import { type SessionId, sessionKey } from '../schema/session';

/**
 * Changes a session's memories (a reset, a loaded state dict) so that the change lasts: for an agent that keeps
 * its sessions in a store, the session is taken from the store first (its lease, its latest version) and the
 * change is committed as one turn, as a call's would be; otherwise `change` just runs.
 */
export async function changeSession(
  agent: AgentBase,
  sessionId: SessionId,
  change: () => void,
): Promise<void> {
  const binding = sessionBindingOf(agent);
  if (binding === undefined) {
    change();
    return;
  }
  const hold = await driveAsync(binding.begin(agent, sessionKey(sessionId), sessionId));
  try {
    change();
    await driveAsync(binding.commit(agent, hold));
  } catch (error) {
    binding.release(hold);
    throw error;
  }
}
