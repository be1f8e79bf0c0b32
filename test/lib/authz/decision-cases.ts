/**
 * The Cedar decision table of contract §6, shared by the Authorizer's own test (decisions.test.ts)
 * and by `authz check`, which must agree with a running proxy on every row
 * (test/commands/authz-check.test.ts).
 */
import type {AuthzAction, ToolAnnotations} from '../../../src/lib/authz/entity-model.ts'

export interface Case {
  name: string
  policies: string[]
  groupClaim?: string
  roleClaim?: string
  entities?: unknown[]
  sub?: string
  claims?: Record<string, unknown>
  action?: AuthzAction
  id?: string
  args?: Record<string, unknown>
  annotations?: ToolAnnotations
  allow: boolean
}

export const CALL_ECHO =
  'permit(principal, action == Action::"call_tool", resource == Tool::"echo");'

export const cases: Case[] = [
  // permit all principals on one tool
  {name: 'permit-all on one tool allows that tool', policies: [CALL_ECHO], id: 'echo', allow: true},
  {
    name: 'permit-all on one tool denies another tool',
    policies: [CALL_ECHO],
    id: 'get-sum',
    allow: false,
  },
  {
    name: 'a call_tool permit does not cover get_prompt of the same name',
    policies: [CALL_ECHO],
    action: 'get_prompt',
    id: 'echo',
    allow: false,
  },
  // one client on one tool
  ...(['alice', 'bob'] as const).map((sub) => ({
    name: `one client on one tool: ${sub}`,
    policies: [
      'permit(principal == Client::"alice", action == Action::"call_tool", resource == Tool::"echo");',
    ],
    sub,
    id: 'echo',
    allow: sub === 'alice',
  })),
  // role via claim_roles
  {
    name: 'role via principal.claim_roles.contains allows the role',
    policies: [
      'permit(principal, action == Action::"call_tool", resource) when { principal.claim_roles.contains("admin") };',
    ],
    claims: {roles: ['user', 'admin']},
    allow: true,
  },
  {
    name: 'role via principal.claim_roles.contains denies other roles',
    policies: [
      'permit(principal, action == Action::"call_tool", resource) when { principal.claim_roles.contains("admin") };',
    ],
    claims: {roles: ['user']},
    allow: false,
  },
  {
    name: 'a missing claim read without has denies',
    policies: [
      'permit(principal, action == Action::"call_tool", resource) when { principal.claim_roles.contains("admin") };',
    ],
    claims: {},
    allow: false,
  },
  {
    name: 'a has guard makes the missing claim a plain false',
    policies: ['permit(principal, action, resource) when { !(principal has claim_department) };'],
    claims: {},
    allow: true,
  },
  {
    name: 'claims are also in the context',
    policies: [
      'permit(principal, action, resource) when { context.claim_email == "a@example.com" };',
    ],
    claims: {email: 'a@example.com'},
    allow: true,
  },
  // arguments
  ...[
    ['add', true],
    ['subtract', true],
    ['delete', false],
  ].map(([op, allow]) => ({
    name: `argument condition resource.arg_operation == ${op}`,
    policies: [
      'permit(principal, action == Action::"call_tool", resource == Tool::"calc") when { resource.arg_operation == "add" || resource.arg_operation == "subtract" };',
    ],
    id: 'calc',
    args: {operation: op},
    allow: allow as boolean,
  })),
  {
    name: 'argument condition without the argument denies',
    policies: [
      'permit(principal, action == Action::"call_tool", resource == Tool::"calc") when { resource.arg_operation == "add" };',
    ],
    id: 'calc',
    args: {},
    allow: false,
  },
  {
    name: 'integral number arguments are Longs',
    policies: [
      'permit(principal, action, resource) when { resource.arg_count < 10 && context.arg_count == 5 };',
    ],
    args: {count: 5},
    allow: true,
  },
  {
    name: 'fractional number arguments are strings, so a Long comparison errors and denies',
    policies: ['permit(principal, action, resource) when { resource.arg_count < 10 };'],
    args: {count: 5.5},
    allow: false,
  },
  {
    name: 'fractional number arguments compare as their decimal text',
    policies: ['permit(principal, action, resource) when { resource.arg_ratio == "0.5" };'],
    args: {ratio: 0.5},
    allow: true,
  },
  {
    name: 'object arguments are only marked present',
    policies: [
      'permit(principal, action, resource) when { resource.arg_opts_present && !(resource has arg_opts) };',
    ],
    args: {opts: {a: 1}},
    allow: true,
  },
  {
    name: 'null arguments are marked present',
    policies: ['permit(principal, action, resource) when { resource has arg_x_present };'],
    args: {x: null},
    allow: true,
  },
  {
    name: 'boolean arguments keep their value',
    policies: ['permit(principal, action, resource) when { resource.arg_dry_run == true };'],
    args: {dry_run: true},
    allow: true,
  },
  {
    name: 'the resource carries its name',
    policies: ['permit(principal, action, resource) when { resource.name like "read_*" };'],
    id: 'read_file',
    allow: true,
  },
  // groups
  ...(
    [
      ['groups', {groups: ['eng']}, undefined, true],
      ['roles', {roles: ['eng']}, undefined, true],
      ['cognito:groups', {'cognito:groups': ['eng']}, undefined, true],
      ['a single string group', {groups: 'eng'}, undefined, true],
      ['a custom claim', {team: ['eng']}, 'team', true],
      ['a nested dot-path claim', {realm_access: {roles: ['eng']}}, 'realm_access.roles', true],
      [
        'an exact key containing a dot, before the dot path',
        {'realm_access.roles': ['eng'], realm_access: {roles: ['x']}},
        'realm_access.roles',
        true,
      ],
      ['the default claims when the custom claim is absent', {groups: ['eng']}, 'team', true],
      [
        'groups first: roles are not read when groups is present',
        {groups: ['ops'], roles: ['eng']},
        undefined,
        false,
      ],
      ['no group claim at all', {}, undefined, false],
      ['another group', {groups: ['ops']}, undefined, false],
    ] as const
  ).map(([label, claims, groupClaim, allow]) => ({
    name: `principal in ToolgateGroup from ${label}`,
    policies: [
      'permit(principal in ToolgateGroup::"eng", action == Action::"call_tool", resource);',
    ],
    claims: claims as Record<string, unknown>,
    ...(groupClaim === undefined ? {} : {groupClaim}),
    allow,
  })),
  {
    name: 'role_claim_name values are parents too',
    policies: ['permit(principal in ToolgateGroup::"admin", action, resource);'],
    claims: {groups: ['eng'], app_roles: ['admin']},
    roleClaim: 'app_roles',
    allow: true,
  },
  {
    name: 'group hierarchy from entities_json applies',
    policies: ['permit(principal in ToolgateGroup::"staff", action, resource);'],
    entities: [
      {
        uid: {type: 'ToolgateGroup', id: 'eng'},
        attrs: {},
        parents: [{type: 'ToolgateGroup', id: 'staff'}],
      },
    ],
    claims: {groups: ['eng']},
    allow: true,
  },
  // forbid beats permit
  {
    name: 'forbid beats permit',
    policies: [
      'permit(principal, action, resource);',
      'forbid(principal, action, resource == Tool::"echo");',
    ],
    id: 'echo',
    allow: false,
  },
  {
    name: 'an erroring forbid denies',
    policies: [
      'permit(principal, action, resource);',
      'forbid(principal, action, resource) when { principal.claim_blocked };',
    ],
    claims: {},
    allow: false,
  },
  // Spec: "a policy that throws an evaluation error … results in a deny", even when another permit allows.
  {
    name: 'an erroring permit denies what another permit allows',
    policies: [
      CALL_ECHO,
      'permit(principal, action, resource) when { principal.claim_roles.contains("admin") };',
    ],
    claims: {},
    id: 'echo',
    allow: false,
  },
  {
    name: 'the same permit guarded with has no longer errors, so the other permit allows',
    policies: [
      CALL_ECHO,
      'permit(principal, action, resource) when { principal has claim_roles && principal.claim_roles.contains("admin") };',
    ],
    claims: {},
    id: 'echo',
    allow: true,
  },
  {
    name: 'an erroring permit scoped to the same exact resource denies it',
    policies: [
      CALL_ECHO,
      'permit(principal, action, resource == Tool::"echo") when { principal.claim_level > 3 };',
    ],
    claims: {},
    id: 'echo',
    allow: false,
  },
  {
    name: 'an erroring permit scoped to another resource does not touch this one',
    policies: [
      CALL_ECHO,
      'permit(principal, action, resource == Tool::"other") when { principal.claim_level > 3 };',
    ],
    claims: {},
    id: 'echo',
    allow: true,
  },
  {
    name: 'a permit erroring on a type mismatch denies what another permit allows',
    policies: [
      CALL_ECHO,
      'permit(principal, action, resource) when { principal.claim_level > 3 };',
    ],
    claims: {level: 'high'},
    id: 'echo',
    allow: false,
  },
  {
    name: 'an erroring forbid scoped to an action not requested does not deny',
    policies: [
      CALL_ECHO,
      'forbid(principal, action == Action::"get_prompt", resource) when { principal.claim_x };',
    ],
    claims: {},
    id: 'echo',
    allow: true,
  },
  {
    name: 'no policy matching is a deny (default deny)',
    policies: ['permit(principal, action == Action::"get_prompt", resource);'],
    allow: false,
  },
  // annotations
  ...(
    [
      ['readOnlyHint true', {readOnlyHint: true}, true],
      ['readOnlyHint false', {readOnlyHint: false}, false],
      ['no annotations', undefined, false],
      ['other annotations only', {destructiveHint: false}, false],
    ] as const
  ).map(([label, annotations, allow]) => ({
    name: `annotation guard with ${label}`,
    policies: [
      'permit(principal, action == Action::"call_tool", resource) when { resource has readOnlyHint && resource.readOnlyHint };',
    ],
    ...(annotations ? {annotations} : {}),
    allow,
  })),
  {
    name: 'an annotation read without has denies when missing',
    policies: [
      'permit(principal, action == Action::"call_tool", resource) when { resource.destructiveHint == false };',
    ],
    allow: false,
  },
  // case sensitivity
  {
    name: 'case mismatch in the resource denies',
    policies: ['permit(principal, action == Action::"call_tool", resource == Tool::"Echo");'],
    id: 'echo',
    allow: false,
  },
  {
    name: 'case mismatch in the action denies',
    policies: ['permit(principal, action == Action::"Call_Tool", resource);'],
    allow: false,
  },
  {
    name: 'case mismatch in the principal denies',
    policies: ['permit(principal == Client::"Alice", action, resource);'],
    sub: 'alice',
    allow: false,
  },
  {
    name: 'case mismatch in a group denies',
    policies: ['permit(principal in ToolgateGroup::"Eng", action, resource);'],
    claims: {groups: ['eng']},
    allow: false,
  },
  // resource URIs verbatim
  ...(
    [
      ['file:///data/a%20b.txt', true],
      ['file:///data/a b.txt', false],
      ['file:///data/a%20b.txt/', false],
      ['FILE:///data/a%20b.txt', false],
    ] as const
  ).map(([uri, allow]) => ({
    name: `resource URIs are compared verbatim: ${uri}`,
    policies: [
      'permit(principal, action == Action::"read_resource", resource == Resource::"file:///data/a%20b.txt");',
    ],
    action: 'read_resource' as const,
    id: uri,
    allow,
  })),
  // claims conversion
  {
    name: 'object claims are records',
    policies: [
      'permit(principal, action, resource) when { context.claim_act.sub == "svc" && principal.claim_act.depth == 2 };',
    ],
    claims: {act: {sub: 'svc', depth: 2}},
    allow: true,
  },
  {
    name: 'a claim cannot smuggle an entity reference',
    policies: [
      'permit(principal, action, resource) when { principal.claim_x == Client::"admin" };',
    ],
    claims: {x: {__entity: {type: 'Client', id: 'admin'}}},
    allow: false,
  },
  {
    name: 'null claims are absent',
    policies: ['permit(principal, action, resource) when { !(principal has claim_nick) };'],
    claims: {nick: null},
    allow: true,
  },
  // entities_json
  {
    name: 'entities_json attributes of a tool are visible (per-tool owner)',
    policies: [
      'permit(principal, action == Action::"call_tool", resource) when { resource has owner && resource.owner == principal.claim_sub };',
    ],
    entities: [{uid: 'Tool::"echo"', attrs: {owner: 'alice'}, parents: []}],
    claims: {sub: 'alice'},
    id: 'echo',
    allow: true,
  },
  {
    name: 'request attributes win over entities_json on the same uid',
    policies: ['permit(principal, action, resource) when { resource.name == "echo" };'],
    entities: [{uid: {type: 'Tool', id: 'echo'}, attrs: {name: 'spoofed'}, parents: []}],
    id: 'echo',
    allow: true,
  },
  {
    name: 'entities_json parents of the client are kept',
    policies: ['permit(principal in ToolgateGroup::"vip", action, resource);'],
    entities: [{uid: 'Client::alice', attrs: {}, parents: ['ToolgateGroup::"vip"']}],
    sub: 'alice',
    claims: {groups: ['eng']},
    allow: true,
  },
]
