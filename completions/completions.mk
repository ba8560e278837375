# completions/: bash, zsh and fish completion for sbxsh and sbx.
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/vendor-completions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d

install-completions:
	@true

uninstall-completions:
	@true

.PHONY: install-completions uninstall-completions
