// Confirmation for destructive commands: asked only on a terminal; scripts must pass --yes.
import {confirm} from '@inquirer/prompts'
import {ValidationError} from '../lib/errors.js'

export async function confirmOrRefuse(question: string, yes: boolean): Promise<boolean> {
  if (yes) return true
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    throw new ValidationError(`${question.replace(/\?$/, '')}: refusing without confirmation; pass --yes to confirm`)
  }
  return confirm({message: question, default: false})
}
