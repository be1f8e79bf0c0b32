import assert from 'node:assert/strict'
import {test} from 'node:test'
import {isLoopbackHost} from '../../../src/lib/http/loopback.ts'

const LOOPBACK: Array<[string, string]> = [
  ['localhost', 'the reserved name'],
  ['LocalHost', 'any case'],
  ['localhost.', 'the fully qualified name'],
  ['app.localhost', 'a name under localhost (RFC 6761 §6.3)'],
  ['a.b-c.localhost.', 'a deeper name, fully qualified'],
  ['127.0.0.1', 'the usual IPv4 loopback'],
  ['127.255.255.254', 'anywhere in 127/8'],
  ['::1', 'IPv6 loopback'],
  ['[::1]', 'bracketed, as URL.hostname keeps it'],
  ['0:0:0:0:0:0:0:1', 'IPv6 loopback written out'],
  ['0::1', 'IPv6 loopback with a leading zero group'],
  ['0000:0000::0001', 'IPv6 loopback with padded groups'],
  ['::ffff:127.0.0.1', 'IPv4-mapped, dotted'],
  ['[::FFFF:7F00:1]', 'IPv4-mapped, hex and bracketed'],
  [new URL('http://[::ffff:127.0.0.2]/').hostname, 'IPv4-mapped as the URL parser rewrites it'],
  [new URL('http://127.1/').hostname, 'IPv4 shorthand after URL parsing'],
]

const NOT_LOOPBACK: Array<[string, string]> = [
  ['', 'empty'],
  ['.localhost', 'no label before .localhost'],
  ['a..localhost', 'an empty label'],
  ['evil-localhost', 'a name that only ends in localhost'],
  ['localhost.example.com', 'localhost as a label of another domain'],
  ['128.0.0.1', 'outside 127/8'],
  ['127.0.0', 'not a dotted quad'],
  ['127.1', 'shorthand IPv4 not normalised by a URL parser'],
  ['0.0.0.0', 'the unspecified address'],
  ['::', 'the IPv6 unspecified address'],
  ['1::1', 'a non-loopback IPv6 ending in 1'],
  ['::1%lo', 'a zone id'],
  ['::ffff:10.0.0.1', 'IPv4-mapped private address'],
  ['::127.0.0.1', 'deprecated IPv4-compatible form'],
  ['64:ff9b::7f00:1', 'NAT64 of 127.0.0.1 (reaches a translator, not this host)'],
  ['2002:7f00:1::', '6to4 of 127.0.0.1'],
  ['[::1', 'an unbalanced bracket'],
  ['example.com', 'a public name'],
]

for (const [host, why] of LOOPBACK) {
  test(`isLoopbackHost accepts ${JSON.stringify(host)} (${why})`, () => {
    assert.equal(isLoopbackHost(host), true)
  })
}
for (const [host, why] of NOT_LOOPBACK) {
  test(`isLoopbackHost refuses ${JSON.stringify(host)} (${why})`, () => {
    assert.equal(isLoopbackHost(host), false)
  })
}
