/*
 * `sbx render-pool`: prints a v1beta1 SandboxTemplate and SandboxWarmPool with sbxsh's
 * secure defaults, for a platform team to review and `kubectl apply` (cluster/README.md).
 */
#ifndef SBX_SESSION_RENDER_POOL_H
#define SBX_SESSION_RENDER_POOL_H

/* argv[0] is "render-pool". Exit status: 0 printed, 2 a usage error (nothing printed
 * on stdout). */
int sbx_render_pool(int argc, char **argv);

#endif
