// The floors of turnchart (shared/spec/ARCHITECTURE.md, "Floors, lowest first"), checked by
// `npm run floors` (part of `npm test`): a folder imports its own files, the floors below its own,
// and the neighbours on its floor listed in NEIGHBOURS — nothing else of the project. Type-only
// imports count. An import that climbs, or one between neighbours not listed, fails with the rule
// named after the importing folder (`floor-of-src/context`, …) and this file's reason for it.

/** Lowest first. A floor may import every floor below it. */
const FLOORS = [
  {
    name: 'ground',
    why: 'the shared vocabulary (types, schemas, limits, errors) and plain helpers',
    folders: ['src/util', 'src/protocol'],
  },
  { name: 'charts', why: 'the pure statecharts', folders: ['machines'] },
  {
    name: 'effects',
    why: 'what the charts\u2019 effects are made of: storage, context assembly, tools, model ports, the RabbitMQ link',
    folders: ['storage', 'src/context', 'src/skills', 'src/compaction', 'src/tools', 'src/model', 'src/transport'],
  },
  { name: 'runtime', why: 'the runtime that provides the charts with their effects', folders: ['src/runtime'] },
  {
    name: 'wings',
    why: 'what is built on the runtime: the HTTP host, the command line, the cluster, tasks, the inspector, telemetry',
    folders: ['src/host', 'src/cli', 'src/cluster', 'src/tasks', 'src/inspect', 'src/telemetry'],
  },
  { name: 'entry', why: 'the package\u2019s public entry, and the demo that uses it', folders: ['src/index.ts', 'src/demo'] },
];

/** Imports allowed between folders of one floor: each says who may use whom, and why. No circles. */
const NEIGHBOURS = {
  // src/util imports nothing of the project.
  'src/protocol': ['src/util'],
  // The skill catalog is a world-state section; compaction builds on the conversation and its request.
  'src/context': ['src/skills'],
  'src/compaction': ['src/context', 'src/skills'],
  // The host serves the task routes and the inspector page, and reports its runtime's spans (issue 27).
  'src/host': ['src/tasks', 'src/inspect', 'src/telemetry'],
  // Span content leaves the host as the inspector's does: through its sanitizer; a worker's metrics count its tasks.
  'src/telemetry': ['src/inspect', 'src/tasks'],
  // The cluster reaches sessions through the host's seam (SessionAccess, HostContext); the host knows it only as a join.
  'src/cluster': ['src/host'],
  // The command line starts a host (in a cluster or not), a worker, and submits tasks; with --otel, OpenTelemetry's SDK.
  'src/cli': ['src/host', 'src/cluster', 'src/tasks', 'src/telemetry'],
  'src/demo': ['src/index.ts'],
};

// ---- the rules, derived from the picture above ----

const floorOf = new Map(FLOORS.flatMap((floor, level) => floor.folders.map((folder) => [folder, { ...floor, level }])));
const allowed = (folder) => [...FLOORS.slice(0, floorOf.get(folder).level).flatMap((floor) => floor.folders), ...(NEIGHBOURS[folder] ?? [])];
const pattern = (folder) => (folder.endsWith('.ts') ? `^${folder.replaceAll('.', '\\.')}$` : `^${folder}/`);
const anyOf = (folders) => folders.map(pattern).join('|');

for (const [folder, neighbours] of Object.entries(NEIGHBOURS)) {
  for (const neighbour of neighbours) {
    if (floorOf.get(folder)?.level !== floorOf.get(neighbour)?.level) throw new Error(`NEIGHBOURS: ${folder} and ${neighbour} are not on one floor`);
  }
}
const visiting = new Set();
const circleFrom = (folder, path) => {
  if (path.includes(folder)) throw new Error(`NEIGHBOURS form a circle: ${[...path, folder].join(' → ')}`);
  if (visiting.has(folder)) return;
  for (const next of NEIGHBOURS[folder] ?? []) circleFrom(next, [...path, folder]);
  visiting.add(folder);
};
for (const folder of Object.keys(NEIGHBOURS)) circleFrom(folder, []);

const PROJECT = '^(machines|storage|src)/';

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    ...[...floorOf].map(([folder, floor]) => ({
      name: `floor-of-${folder}`,
      severity: 'error',
      comment:
        `${folder} is on the ${floor.name} floor (${floor.why}). It may import only: ` +
        `${allowed(folder).join(', ') || 'nothing of the project'}. ` +
        'Move what both need down to the lowest floor that uses it, or list the neighbour in .dependency-cruiser.js.',
      from: { path: pattern(folder) },
      to: { path: PROJECT, pathNot: anyOf([folder, ...allowed(folder)]) },
    })),
    {
      name: 'on-a-floor',
      severity: 'error',
      comment: 'Every folder of machines/, storage/ and src/ has a floor: give a new one its place in FLOORS in .dependency-cruiser.js.',
      from: { path: PROJECT, pathNot: anyOf([...floorOf.keys()]) },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.d\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
