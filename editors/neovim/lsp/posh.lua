-- posh-lsp's default configuration, found by `vim.lsp.config` on 'runtimepath' (Neovim 0.11+).
-- With this plugin on the runtimepath, `vim.lsp.enable('posh')` alone starts the server;
-- `require('posh').setup()` does that too and adds filetype detection, inlay hints and code lenses.
return {
  cmd = { 'posh-lsp' },
  -- Shell scripts (Neovim calls a bash script `sh` or `bash`) and posh's annotation files.
  filetypes = { 'sh', 'bash', 'posh' },
  -- posh.toml names the mounts the hints plan against.
  root_markers = { 'posh.toml', '.git' },
}
