import { z } from 'zod';

/** The plan a model keeps with the `update_plan` control tool (RT-22). */
export const planStepSchema = z.object({
  step: z.string().min(1).max(2_000),
  status: z.enum(['pending', 'in_progress', 'completed']),
});

export const planSchema = z
  .object({
    explanation: z.string().max(4_000).optional(),
    plan: z.array(planStepSchema).max(100),
  })
  .refine((p) => p.plan.filter((s) => s.status === 'in_progress').length <= 1, {
    message: 'at most one step can be in_progress',
  });

export type Plan = z.infer<typeof planSchema>;
