// An injectable clock, so cooldown and reclaim ages are testable.

export interface Clock {
  now(): Date
}

export const systemClock: Clock = {now: () => new Date()}
