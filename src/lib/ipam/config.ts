// Reading and changing the IPAM configuration (`ipam configure`).
import {keys} from '../store/keys.js'
import {configFrom, type Ctx, withRetry, WriteBatch} from './context.js'
import {encodeIpamConfig, type IpamConfig, validateIpamConfig} from './records.js'

/** Apply `changes` on top of the stored config; validated as a whole; a no-op change writes nothing. */
export async function updateConfig(ctx: Ctx, changes: Partial<IpamConfig>): Promise<IpamConfig> {
  return withRetry(ctx, async () => {
    const kv = await ctx.store.get(keys.ipamConfig())
    const current = configFrom(kv)
    const next = {...current, ...changes}
    validateIpamConfig(next)
    if (kv && encodeIpamConfig(next) === kv.value) return next
    await new WriteBatch(ctx).put(keys.ipamConfig(), encodeIpamConfig(next), kv).commit()
    return next
  })
}
