import { z } from 'zod';

/**
 * The workflow step catalog (spec 4.3 `GET /workflows/catalog`): every step type a draft may use,
 * with the schema of its `config`. The draft body is docs/contracts.md's `{trigger: {type}, steps: [{id,
 * type, config}]}`; the step ids are the names a run reports its progress by.
 */

/** Triggers: `manual` (POST …/run) and `hook` (the signed public receiver, POST /workflow-hooks/{token}). */
export const TRIGGER_TYPES = ['manual', 'hook'] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];

/** At most this many steps per workflow: a run is one document, its steps embedded. */
export const MAX_STEPS = 50;
/** A pending approval of a `wait_for_approval` step expires after this long unless configured: 24 h. */
export const DEFAULT_APPROVAL_TTL_S = 24 * 3600;
export const MAX_APPROVAL_TTL_S = 30 * 24 * 3600;

const tag = z.string().trim().min(1).max(128);

export const STEP_CONFIGS = {
  /** Materialises a named transformation of the run's asset (the Transforms service, idempotent by derivative id). */
  transform: z.object({ transformation: z.string().min(1).max(64) }).strict(),
  /** Adds and removes tags on the run's asset. */
  tag: z
    .object({ add: z.array(tag).max(100).default([]), remove: z.array(tag).max(100).default([]) })
    .strict()
    .refine((c) => c.add.length + c.remove.length > 0, 'add or remove at least one tag'),
  /** Moves the run's asset into another bucket of the account (by bucket id). */
  move: z.object({ bucket: z.string().min(1).max(64) }).strict(),
  /** Publishes a notification event on the assets workflow topic (`<prefix>.assets.workflows`). */
  notify: z.object({ message: z.string().min(1).max(1000) }).strict(),
  /** Pauses the run until a person approves (continues) or rejects (fails) it. */
  wait_for_approval: z
    .object({
      title: z.string().min(1).max(200).optional(),
      expires_in: z.number().int().min(60).max(MAX_APPROVAL_TTL_S).optional(),
    })
    .strict(),
} as const;
export type StepType = keyof typeof STEP_CONFIGS;
export const STEP_TYPES = Object.keys(STEP_CONFIGS) as StepType[];

const DESCRIPTIONS: Record<StepType, { summary: string; scope: string; config: Record<string, string> }> = {
  transform: {
    summary: "Materialise a named transformation of the run's asset",
    scope: 'assets:write',
    config: { transformation: 'string (a transformation name)' },
  },
  tag: {
    summary: "Add and remove tags on the run's asset",
    scope: 'assets:write',
    config: { add: 'string[]', remove: 'string[]' },
  },
  move: { summary: "Move the run's asset to another bucket", scope: 'assets:write', config: { bucket: 'string (bucket id)' } },
  notify: { summary: 'Publish a notification event', scope: 'assets:read', config: { message: 'string' } },
  wait_for_approval: {
    summary: 'Wait until a person approves or rejects the run',
    scope: 'assets:write',
    config: {
      title: 'string (optional)',
      expires_in: `integer seconds, 60..${MAX_APPROVAL_TTL_S} (default ${DEFAULT_APPROVAL_TTL_S})`,
    },
  },
};

export function catalogView() {
  return {
    triggers: TRIGGER_TYPES.map((type) => ({ type })),
    steps: STEP_TYPES.map((type) => ({ type, ...DESCRIPTIONS[type] })),
    limits: { max_steps: MAX_STEPS },
  };
}

export interface StepDef {
  id: string;
  type: StepType;
  config: Record<string, unknown>;
}
export interface Definition {
  trigger: { type: TriggerType };
  steps: StepDef[];
}

const STEP_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/i;

/** The draft body's shape (loose on step config: `validate` reports config problems as findings). */
export const definitionSchema = z
  .object({
    trigger: z.object({ type: z.enum(TRIGGER_TYPES) }).strict(),
    steps: z
      .array(
        z
          .object({
            id: z.string().regex(STEP_ID, 'step ids are 1-63 letters, digits, _ or -'),
            type: z.string().min(1).max(64),
            config: z.record(z.unknown()).default({}),
          })
          .strict(),
      )
      .max(MAX_STEPS),
  })
  .strict();

export interface Finding {
  path: string;
  message: string;
}

/** Every problem of a definition (empty: publishable). Config is normalised in place on success. */
export function findings(def: Definition): Finding[] {
  const out: Finding[] = [];
  if (def.steps.length === 0) out.push({ path: 'steps', message: 'a workflow needs at least one step' });
  const seen = new Set<string>();
  def.steps.forEach((s, i) => {
    if (seen.has(s.id)) out.push({ path: `steps[${i}].id`, message: `duplicate step id ${s.id}` });
    seen.add(s.id);
    const schema = STEP_CONFIGS[s.type as StepType];
    if (!schema) {
      out.push({ path: `steps[${i}].type`, message: `unknown step type ${s.type}; see GET /workflows/catalog` });
      return;
    }
    const parsed = schema.safeParse(s.config ?? {});
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        out.push({ path: [`steps[${i}].config`, ...issue.path].join('.'), message: issue.message });
      }
    }
  });
  return out;
}

/** The definition with each step's config parsed (defaults filled); call after `findings` is empty. */
export function normalised(def: Definition): Definition {
  return {
    trigger: { type: def.trigger.type },
    steps: def.steps.map((s) => ({
      id: s.id,
      type: s.type,
      config: STEP_CONFIGS[s.type].parse(s.config ?? {}) as Record<string, unknown>,
    })),
  };
}
