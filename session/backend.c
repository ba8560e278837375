/*
 * The backend registry: finds a backend class by name among those the build
 * put in session_backend_classes[] (session/backend.h), and asks each in turn
 * about a session's recorded state. Names no backend itself.
 */
#include "session/backend.h"

#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"

const sbx_backend_class *session_backend_class_find(const char *name)
{
    for (size_t i = 0; session_backend_classes[i]; i++)
        if (!strcmp(session_backend_classes[i]->name, name))
            return session_backend_classes[i];
    return NULL;
}

sbx_backend *session_backend_new(const sbx_config *cfg, const sbx_sandbox_spec *spec, sbx_err *err)
{
    const sbx_backend_class *c = session_backend_class_find(cfg->backend);

    if (c)
        return c->create(cfg, spec, err);
    /* the names this build has, from the registry */
    strbuf names = STRBUF_INIT;
    for (size_t i = 0; session_backend_classes[i]; i++)
        strbuf_addf(&names, "%s%s", i ? (session_backend_classes[i + 1] ? ", " : " or ") : "",
                    session_backend_classes[i]->name);
    sbx_errf(err, "AGENT_SANDBOX_BACKEND='%s': this build has no such backend; use %s",
             cfg->backend, names.buf);
    strbuf_release(&names);
    return NULL;
}

void *session_backend_settings(const sbx_config *cfg, const sbx_backend_class *c)
{
    for (size_t i = 0; cfg->backend_settings && session_backend_classes[i]; i++)
        if (session_backend_classes[i] == c)
            return cfg->backend_settings[i];
    return NULL;
}

void session_backend_free(sbx_backend *b)
{
    if (b)
        b->ops->free(b);
}

int session_backend_peek(const char *state_dir, strbuf *json)
{
    for (size_t i = 0; session_backend_classes[i]; i++) {
        const sbx_backend_class *c = session_backend_classes[i];
        if (c->peek && c->peek(state_dir, json) == 0)
            return 0;
    }
    return -1;
}

int session_backend_adopt(const char *state_dir, sbx_config *cfg)
{
    for (size_t i = 0; session_backend_classes[i]; i++) {
        const sbx_backend_class *c = session_backend_classes[i];
        if (c->adopt && c->adopt(state_dir, cfg) == 0) {
            free(cfg->backend);
            cfg->backend = xstrdup(c->name);
            return 0;
        }
    }
    return -1;
}
