// Confirmation for destructive commands: asked only on a terminal; scripts must pass --yes.
import {confirm} from '@inquirer/prompts'
import {ValidationError} from '../lib/errors.js'

/** `showFirst`: printed only when the question is really asked, e.g. the list of what would be removed. */
export async function confirmOrRefuse(question: string, yes: boolean, showFirst?: () => void): Promise<boolean> {
  if (yes) return true
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    throw new ValidationError(`${question.replace(/\?$/, '')}: refusing without confirmation; pass --yes to confirm`)
  }
  showFirst?.()
  return confirm({message: question, default: false})
}
