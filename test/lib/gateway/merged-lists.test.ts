import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {parseBackendFlag, validateGatewayConfig} from '../../../src/lib/gateway/config.ts'
import {
  exposeItem,
  mergeSorted,
  pageOf,
  prefixResultUris,
  type Item,
} from '../../../src/lib/gateway/merged-lists.ts'
import {backendAttribute, splitName, splitUri} from '../../../src/lib/gateway/names.ts'

const [a, b] = validateGatewayConfig(
  {backends: {a: {tools: {deny: ['secret']}}}},
  [parseBackendFlag('a'), parseBackendFlag('b=bee')],
  {baseDir: '/', where: 'test'},
).backends as [
  ReturnType<typeof validateGatewayConfig>['backends'][number],
  ReturnType<typeof validateGatewayConfig>['backends'][number],
]

const tools = (names: string[]) => names.map((name) => ({name, inputSchema: {type: 'object'}}))

describe('gateway names', () => {
  it('split at the first separator; a prefix never holds one', () => {
    assert.deepEqual(splitName('a__b__c'), ['a', 'b__c'])
    assert.deepEqual(splitUri('a+b+c://x'), ['a', 'b+c://x'])
    assert.equal(splitName('__x'), undefined)
    assert.equal(splitName('plain'), undefined)
  })

  it('Cedar sees backend on every routed name, nothing on an unknown prefix', () => {
    const attr = backendAttribute([a, b])
    assert.deepEqual(attr('Tool', 'a__echo'), {backend: 'a'})
    assert.deepEqual(attr('Prompt', 'bee__p'), {backend: 'b'})
    assert.deepEqual(attr('Resource', 'bee+file:///x'), {backend: 'b'})
    // The name b is not its prefix: nothing routes there, nothing is claimed.
    assert.equal(attr('Tool', 'b__echo'), undefined)
    assert.equal(attr('Resource', 'a__file'), undefined)
  })
})

describe('gateway merged lists', () => {
  it('prefix, shape and sort; a backend listing one name twice shows it once', () => {
    const parts = [
      tools(['zeta', 'secret', 'echo', 'echo'])
        .map((t) => exposeItem('tools', a, t)!)
        .filter(Boolean),
      tools(['echo']).map((t) => exposeItem('tools', b, t)!),
    ]
    const merged = mergeSorted('tools', parts as Item[][])
    assert.deepEqual(
      merged.map((t) => t.name),
      ['a__echo', 'a__zeta', 'bee__echo'],
    )
    assert.equal(exposeItem('tools', a, {name: 42}), undefined)
    assert.equal(exposeItem('tools', a, 'x'), undefined)
    const res = exposeItem('resources', b, {uri: 'file:///x', name: 'x'})
    assert.deepEqual(res, {uri: 'bee+file:///x', name: 'bee__x'})
    const tpl = exposeItem('resourceTemplates', b, {uriTemplate: 'db://{id}', name: 't'})
    assert.deepEqual(tpl, {uriTemplate: 'bee+db://{id}', name: 'bee__t'})
  })

  it('pages with cursors of its own that survive the list changing between pages', () => {
    const items = tools(['a__1', 'a__2', 'a__3', 'b__1', 'b__2']) as Item[]
    const first = pageOf('tools', items, undefined, 2)
    assert.ok(!('error' in first))
    assert.deepEqual(
      first.items.map((t) => t.name),
      ['a__1', 'a__2'],
    )
    // a__2 (the last one given) vanished, b__0 appeared after it: the next page starts after a__2.
    const changed = tools(['a__1', 'a__3', 'b__0', 'b__1', 'b__2']) as Item[]
    const second = pageOf('tools', changed, first.nextCursor, 2)
    assert.ok(!('error' in second))
    assert.deepEqual(
      second.items.map((t) => t.name),
      ['a__3', 'b__0'],
    )
    const third = pageOf('tools', changed, second.nextCursor, 2)
    assert.ok(!('error' in third))
    assert.deepEqual(
      third.items.map((t) => t.name),
      ['b__1', 'b__2'],
    )
    assert.equal(third.nextCursor, undefined, 'no cursor after the last page')
  })

  it('refuses a cursor it did not make, or one made for another list', () => {
    const items = tools(['a__1', 'a__2']) as Item[]
    const page = pageOf('tools', items, undefined, 1)
    assert.ok(!('error' in page) && page.nextCursor)
    for (const bad of [
      '',
      'x',
      'W10',
      42,
      'a'.repeat(5000),
      Buffer.from('["tools",1]').toString('base64url'),
    ])
      assert.deepEqual(
        pageOf('tools', items, bad, 1),
        {error: 'invalid cursor'},
        String(bad).slice(0, 20),
      )
    assert.deepEqual(pageOf('prompts', items, page.nextCursor, 1), {error: 'invalid cursor'})
  })

  it('prefixes resource URIs in prompt messages', () => {
    const got = prefixResultUris('bee', {
      messages: [
        {role: 'user', content: {type: 'text', text: 'file:///t'}},
        {role: 'user', content: {type: 'resource', resource: {uri: 'file:///e', text: 'e'}}},
      ],
    })
    assert.deepEqual(got, {
      messages: [
        {role: 'user', content: {type: 'text', text: 'file:///t'}},
        {role: 'user', content: {type: 'resource', resource: {uri: 'bee+file:///e', text: 'e'}}},
      ],
    })
  })

  it('prefixes resource URIs in read results and in links a tool returns', () => {
    const read = prefixResultUris('bee', {contents: [{uri: 'file:///x', text: 'x'}]})
    assert.deepEqual(read, {contents: [{uri: 'bee+file:///x', text: 'x'}]})
    const call = prefixResultUris('bee', {
      content: [
        {type: 'text', text: 'uri: file:///untouched'},
        {type: 'resource_link', uri: 'file:///l', name: 'l'},
        {type: 'resource', resource: {uri: 'file:///e', text: 'e'}},
      ],
    })
    assert.deepEqual(call, {
      content: [
        {type: 'text', text: 'uri: file:///untouched'},
        {type: 'resource_link', uri: 'bee+file:///l', name: 'l'},
        {type: 'resource', resource: {uri: 'bee+file:///e', text: 'e'}},
      ],
    })
  })
})
