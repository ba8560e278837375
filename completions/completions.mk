# completions/: bash, zsh and fish completion for sbxsh and sbx.
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/vendor-completions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d

install-completions:
	install -d $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 644 completions/sbxsh.bash $(DESTDIR)$(BASHCOMPDIR)/sbxsh
	ln -sf sbxsh $(DESTDIR)$(BASHCOMPDIR)/sbx
	install -m 644 completions/_sbxsh $(DESTDIR)$(ZSHCOMPDIR)/_sbxsh
	install -m 644 completions/sbxsh.fish $(DESTDIR)$(FISHCOMPDIR)/sbxsh.fish
	install -m 644 completions/sbxsh.fish $(DESTDIR)$(FISHCOMPDIR)/sbx.fish

uninstall-completions:
	rm -f $(DESTDIR)$(BASHCOMPDIR)/sbxsh $(DESTDIR)$(BASHCOMPDIR)/sbx \
	      $(DESTDIR)$(ZSHCOMPDIR)/_sbxsh $(DESTDIR)$(FISHCOMPDIR)/sbxsh.fish \
	      $(DESTDIR)$(FISHCOMPDIR)/sbx.fish

.PHONY: install-completions uninstall-completions
