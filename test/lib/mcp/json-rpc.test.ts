import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {jsonRpcError, parseJsonRpcBody} from '../../../src/lib/mcp/json-rpc.ts'

describe('JSON-RPC message parsing', () => {
  const table: [string, string, string][] = [
    ['a request', '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', 'request'],
    [
      'a request with a string id and params',
      '{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo"}}',
      'request',
    ],
    ['a notification', '{"jsonrpc":"2.0","method":"notifications/initialized"}', 'notification'],
    ['a response to a server request', '{"jsonrpc":"2.0","id":7,"result":{}}', 'response'],
    [
      'an error response',
      '{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}',
      'response',
    ],
    ['not JSON', 'hello', 'not_json'],
    ['an empty body', '', 'not_json'],
    ['a batch', '[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 'batch'],
    ['an empty batch', '[]', 'batch'],
    ['a scalar', '42', 'invalid'],
    ['a wrong jsonrpc version', '{"jsonrpc":"1.0","id":1,"method":"ping"}', 'invalid'],
    ['a non-string method', '{"jsonrpc":"2.0","id":1,"method":5}', 'invalid'],
    ['an object id', '{"jsonrpc":"2.0","id":{},"method":"ping"}', 'invalid'],
    ['scalar params', '{"jsonrpc":"2.0","id":1,"method":"ping","params":3}', 'invalid'],
    ['null params', '{"jsonrpc":"2.0","id":1,"method":"ping","params":null}', 'invalid'],
    ['an object with neither method nor result', '{"jsonrpc":"2.0","id":1}', 'invalid'],
  ]
  for (const [label, body, expected] of table) {
    it(`classifies ${label} as ${expected}`, () => {
      const out = parseJsonRpcBody(Buffer.from(body))
      assert.equal(out.ok ? out.message.kind : out.reason, expected)
    })
  }

  it('keeps method, id and params of a request', () => {
    const out = parseJsonRpcBody(
      '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"m":1}}}',
    )
    assert.deepEqual(out, {
      ok: true,
      message: {
        kind: 'request',
        id: 3,
        method: 'tools/call',
        params: {name: 'echo', arguments: {m: 1}},
      },
    })
  })

  it('omits id from an error when the request had none', () => {
    assert.equal(
      jsonRpcError(undefined, 403, 'Unauthorized'),
      '{"jsonrpc":"2.0","error":{"code":403,"message":"Unauthorized"}}',
    )
    assert.equal(
      jsonRpcError('x', 403, 'Unauthorized'),
      '{"jsonrpc":"2.0","id":"x","error":{"code":403,"message":"Unauthorized"}}',
    )
  })
})
