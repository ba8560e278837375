/*
 * The backend registry: finds a backend class by name among those the build
 * put in sbx_backend_classes[] (session/backend.h), and asks each in turn
 * about a session's recorded state. Names no backend itself.
 */
#include "session/backend.h"

#include <string.h>

const sbx_backend_class *sbx_backend_class_find(const char *name)
{
    for (size_t i = 0; sbx_backend_classes[i]; i++)
        if (!strcmp(sbx_backend_classes[i]->name, name))
            return sbx_backend_classes[i];
    return NULL;
}

sbx_backend *sbx_backend_new(const sbx_config *cfg, const sbx_sandbox_spec *spec, sbx_err *err)
{
    const sbx_backend_class *c = sbx_backend_class_find(cfg->backend);

    if (c)
        return c->create(cfg, spec, err);
    /* kube is the backend config.c and doctor know of before it is built */
    if (!strcmp(cfg->backend, "kube"))
        sbx_errf(err, "AGENT_SANDBOX_BACKEND=kube: the Kubernetes backend is not built yet; "
                 "unset AGENT_SANDBOX_BACKEND to use the local one");
    else
        sbx_errf(err, "AGENT_SANDBOX_BACKEND='%s': use local (or kube)", cfg->backend);
    return NULL;
}

void sbx_backend_free(sbx_backend *b)
{
    if (b)
        b->ops->free(b);
}

int sbx_backend_peek(const char *state_dir, strbuf *json)
{
    for (size_t i = 0; sbx_backend_classes[i]; i++)
        if (sbx_backend_classes[i]->peek && sbx_backend_classes[i]->peek(state_dir, json) == 0)
            return 0;
    return -1;
}

int sbx_backend_adopt(const char *state_dir, sbx_config *cfg)
{
    for (size_t i = 0; sbx_backend_classes[i]; i++) {
        const sbx_backend_class *c = sbx_backend_classes[i];
        if (c->adopt && c->adopt(state_dir, cfg) == 0) {
            free(cfg->backend);
            cfg->backend = xstrdup(c->name);
            return 0;
        }
    }
    return -1;
}
