// ipamctl's typed errors → CNI codes, and the printed error object.
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {CNI_ERR, CniError, formatCniError, toCniError} from '../../../src/lib/cni/errors.ts'
import {
  ConflictError,
  DatastoreUnavailableError,
  ExhaustedError,
  IpamError,
  NotFoundError,
  RevisionConflict,
  ValidationError,
} from '../../../src/lib/errors.ts'

describe('toCniError', () => {
  it('maps each typed error', () => {
    const cases: [unknown, number][] = [
      [new ValidationError('v'), 7],
      [new DatastoreUnavailableError('d'), 11],
      [new RevisionConflict('r'), 11],
      [new ExhaustedError('e'), 999],
      [new NotFoundError('n'), 999],
      [new ConflictError('c'), 999],
      [new IpamError('i'), 999],
      [new Error('x'), 999],
      ['a string', 999],
    ]
    for (const [err, code] of cases) {
      const e = toCniError(err)
      assert.equal(e.code, code, String(err))
      assert.equal(e.msg, err instanceof Error ? err.message : String(err))
      assert.equal(e.details, '')
    }
  })

  it('keeps a CniError as it is', () => {
    const e = new CniError(CNI_ERR.notAvailable, 'plugin not available', 'why')
    assert.equal(toCniError(e), e)
    assert.equal(e.message, 'plugin not available; why')
  })

  it('has the well-known codes', () => {
    assert.deepEqual(
      [
        CNI_ERR.incompatibleVersion,
        CNI_ERR.unsupportedField,
        CNI_ERR.unknownContainer,
        CNI_ERR.invalidEnv,
        CNI_ERR.io,
        CNI_ERR.decoding,
        CNI_ERR.invalidConfig,
        CNI_ERR.tryAgainLater,
        CNI_ERR.notAvailable,
        CNI_ERR.internal,
      ],
      [1, 2, 3, 4, 5, 6, 7, 11, 50, 999],
    )
  })
})

describe('formatCniError', () => {
  it('writes {cniVersion, code, msg, details} with 4-space indentation and no trailing newline', () => {
    assert.equal(
      formatCniError(
        new CniError(7, 'Invalid Configuration', 'Network 192.168.0.0/31 too small to allocate from.'),
        '1.0.0',
      ),
      '{\n    "cniVersion": "1.0.0",\n    "code": 7,\n    "msg": "Invalid Configuration",\n    "details": "Network 192.168.0.0/31 too small to allocate from."\n}',
    )
  })

  it('omits empty details and escapes like Go', () => {
    assert.equal(
      formatCniError(new CniError(999, 'a<b>&\u2028'), '0.4.0'),
      '{\n    "cniVersion": "0.4.0",\n    "code": 999,\n    "msg": "a\\u003cb\\u003e\\u0026\\u2028"\n}',
    )
  })
})
