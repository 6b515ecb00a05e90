// Semantic colours. chalk already turns itself off when stdout is not a TTY; NO_COLOR is honoured here
// explicitly because not every version of its detection does.
import chalk from 'chalk'

if ('NO_COLOR' in process.env && process.env.NO_COLOR !== '') chalk.level = 0

export const style = {
  ok: (s: string) => chalk.green(s),
  warn: (s: string) => chalk.yellow(s),
  error: (s: string) => chalk.red(s),
  id: (s: string) => chalk.cyan(s),
  dim: (s: string) => chalk.dim(s),
}

/** Colour for stderr, which may be a TTY when stdout is not. */
export function errorStyle(s: string): string {
  return process.stderr.isTTY && chalk.level > 0 && !('NO_COLOR' in process.env) ? chalk.red(s) : s
}

/** Whether stdout gets colour: a TTY, and neither NO_COLOR nor chalk's own detection turned it off. */
export const stdoutColour = (): boolean => process.stdout.isTTY === true && chalk.level > 0

/** Block-map cells: one coloured square per address on a colour terminal. */
export const cellStyle = {
  allocated: (s: string) => chalk.red(s),
  free: (s: string) => chalk.green(s),
  reserved: (s: string) => chalk.cyan(s),
  cooldown: (s: string) => chalk.yellow(s),
}
