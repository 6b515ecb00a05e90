// `agent status`: ask the agent for its status over the socket; no answer is an error of its own (exit 5).
import {IpamError} from '../errors.js'
import {agentRequest, replyError} from './client.js'

export interface AgentStatus {
  node: string
  datastore: string
  datastoreId: string
  socket: string
  metrics: string | null
  pid: number
  version: string
  startedAt: string
  uptimeSeconds: number
  queued: number
  counters: {
    batches: number
    batchedRequests: number
    blockTransactions: number
    gcPasses: number
    gcReleased: number
    gcDeletedHandles: number
    datastoreRoundTrips: Record<string, number>
    casConflicts: number
  }
}

/** No agent answers on the socket. Exit status 5, as an unreachable datastore. */
export class AgentDownError extends IpamError {
  override readonly exitCode = 5
}

export async function agentStatus(socket: string): Promise<AgentStatus> {
  const o = await agentRequest(socket, 'GET', '/v1/status')
  if (o.kind !== 'answered')
    throw new AgentDownError(`the ipamctl agent is down: nothing answers on ${socket} (${o.reason})`)
  const e = replyError(o)
  if (e) throw new AgentDownError(`the ipamctl agent on ${socket} answered with an error: ${e.message}`)
  return o.body as unknown as AgentStatus
}
