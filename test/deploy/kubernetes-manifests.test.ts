import {test, describe} from 'node:test'
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parse, parseAllDocuments} from 'yaml'
import {validateServeConfig} from '../../src/lib/config/serve-config.ts'
import {getJson, startServe, tempDir, writeConfig, FIXTURES} from '../helpers/serve-process.ts'
import {freePort} from '../helpers/postgres.ts'

/**
 * deploy/kubernetes (docs/deploy.md): the YAML parses, the probes name paths and the port that
 * `serve` really serves (checked against a running `serve`), the Service targets the API port,
 * the pods run non-root on a read-only root filesystem, and the ConfigMap is a valid config.
 */
const DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'deploy', 'kubernetes')

type Obj = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

function load(): Map<string, Obj> {
  const byKind = new Map<string, Obj>()
  for (const file of readdirSync(DIR).filter((f) => f.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(readFileSync(join(DIR, file), 'utf8'))) {
      assert.deepEqual(doc.errors, [], `${file} parses`)
      const o = doc.toJS() as Obj
      byKind.set(o.kind as string, o)
    }
  }
  return byKind
}

const portOf = (arg: string | undefined) => Number(/:(\d+)$/.exec(arg ?? '')?.[1])

describe('Kubernetes manifests', () => {
  const k = load()
  const deployment = k.get('Deployment')!
  const pod = deployment.spec.template.spec
  const container = pod.containers[0]
  const args = container.args as string[]
  const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
  const named = (name: string) =>
    (container.ports as Obj[]).find((p) => p.name === name)?.containerPort as number

  test('every resource is present and listed in kustomization.yaml', () => {
    for (const kind of ['ConfigMap', 'Secret', 'Deployment', 'Service', 'PodDisruptionBudget'])
      assert.ok(k.has(kind), kind)
    const kustomization = k.get('Kustomization')!
    const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    assert.deepEqual([...kustomization.resources].sort(), files.sort())
  })

  test('two replicas, non-root, read-only root filesystem, resource requests', () => {
    assert.equal(deployment.spec.replicas, 2)
    assert.equal(pod.securityContext.runAsNonRoot, true)
    assert.ok(pod.securityContext.runAsUser > 0)
    assert.equal(container.securityContext.readOnlyRootFilesystem, true)
    assert.equal(container.securityContext.allowPrivilegeEscalation, false)
    assert.deepEqual(container.securityContext.capabilities.drop, ['ALL'])
    assert.ok(container.resources.requests.cpu && container.resources.requests.memory)
    const pdb = k.get('PodDisruptionBudget')!
    assert.ok(pdb.spec.minAvailable < deployment.spec.replicas)
    assert.deepEqual(pdb.spec.selector.matchLabels, deployment.spec.template.metadata.labels)
  })

  test('the pod and the container image tune glibc malloc the same way (docs/serve.md, Memory)', () => {
    const env = (container.env as Obj[]).find((e) => e.name === 'GLIBC_TUNABLES')?.value as string
    assert.match(env, /^glibc\.malloc\.arena_max=1:glibc\.malloc\.trim_threshold=\d+$/)
    const dockerfile = readFileSync(join(DIR, '..', 'docker', 'Dockerfile'), 'utf8')
    assert.equal(/GLIBC_TUNABLES=(\S+)/.exec(dockerfile)?.[1], env)
  })

  test('probes use the internal port; the Service targets the API port only', () => {
    const internal = portOf(flag('internal-address'))
    const api = portOf(flag('address'))
    assert.ok(internal > 0 && api > 0 && internal !== api)
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
      const get = container[probe].httpGet
      assert.equal(named(get.port), internal, `${probe} port`)
    }
    const service = k.get('Service')!
    assert.deepEqual(
      (service.spec.ports as Obj[]).map((p) => named(p.targetPort)),
      [api],
    )
    assert.deepEqual(service.spec.selector, deployment.spec.template.metadata.labels)
  })

  test('probe paths answer on the internal port of a running serve (health 200, readiness 200)', async (t) => {
    const internal = await freePort()
    const dir = tempDir()
    const s = await startServe([
      '--config',
      writeConfig(
        dir,
        'serve.yaml',
        `sources:\n  - name: f\n    file: {path: ${FIXTURES}/registry.json}\nregistries:\n  - name: default\n    sources: [f]\nauth: {mode: anonymous}\n`,
      ),
      '--internal-address',
      `127.0.0.1:${internal}`,
    ])
    t.after(() => s.stop())
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
      const path = container[probe].httpGet.path as string
      const r = await getJson(`http://127.0.0.1:${internal}${path}`)
      assert.equal(r.status, 200, `${probe} ${path}`)
      // Never the API port: probes there would need a token and would expose nothing useful.
      assert.equal((await getJson(`${s.url}${path}`)).status, 404, `${path} on the API port`)
    }
  })

  test('the ConfigMap holds a valid serve config whose secrets come from the mounted Secret', () => {
    const cm = k.get('ConfigMap')!
    const secret = k.get('Secret')!
    const doc = parse(cm.data['serve.yaml'] as string) as Obj
    const pg = doc.storage.postgres
    const mount = (container.volumeMounts as Obj[]).find((m) => m.name === 'db')!
    const dbVolume = (pod.volumes as Obj[]).find((v) => v.name === 'db')!
    assert.equal(dbVolume.secret.secretName, secret.metadata.name)
    const tmp = mkdtempSync(join(tmpdir(), 'tg-k8s-'))
    try {
      for (const key of ['passwordFile', 'sslRootCert']) {
        const path = pg[key] as string
        assert.equal(dirname(path), mount.mountPath, `${key} is in the mounted Secret`)
        const item = path.slice(mount.mountPath.length + 1)
        assert.ok(item in secret.stringData, `the Secret has ${item}`)
        writeFileSync(join(tmp, item), secret.stringData[item] as string)
        pg[key] = join(tmp, item)
      }
      const config = validateServeConfig(doc, {defaultDbPath: join(tmp, 'unused.db')})
      assert.equal(config.storage.kind, 'postgres')
    } finally {
      rmSync(tmp, {recursive: true, force: true})
    }
  })
})
