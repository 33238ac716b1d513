-- posh for Neovim (0.11+): posh-lsp for shell scripts and posh's annotation files.
--
--   require('posh').setup({
--     cmd = { 'posh-lsp' },            -- the server's command line
--     settings = {                      -- what posh-lsp reads (as initializationOptions and
--       maxMovedBytes = 100000000,      --   workspace/didChangeConfiguration, section `posh`)
--       copiesPerMount = 1,
--       placement = 'cost-based',       -- or 'greedy'
--     },
--     inlay_hints = true,               -- where each command runs, what each pipe moves
--     codelens = true,                  -- per pipeline: what bash and posh move; atop: coverage
--   })
--
-- The server alone needs none of this: lsp/posh.lua (on the runtimepath with this plugin) holds
-- its default configuration, so `vim.lsp.enable('posh')` starts it (see the README).
local M = {}

M.defaults = {
  cmd = { 'posh-lsp' },
  filetypes = { 'sh', 'bash', 'posh' },
  root_markers = { 'posh.toml', '.git' },
  settings = {},
  inlay_hints = true,
  codelens = true,
}

--- The posh-lsp clients attached to a buffer.
---@param bufnr integer
---@return vim.lsp.Client[]
function M.clients(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr, name = 'posh' })
end

local function refresh_codelens(bufnr)
  if vim.api.nvim_buf_is_valid(bufnr) and #M.clients(bufnr) > 0 then
    vim.lsp.codelens.refresh({ bufnr = bufnr })
  end
end

---@param opts? table see M.defaults
function M.setup(opts)
  opts = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  if type(opts.cmd) == 'string' then
    opts.cmd = { opts.cmd }
  end
  M.options = opts

  vim.filetype.add({ extension = { posh = 'posh' } })

  -- Settings go both ways posh-lsp reads them: at initialize, and in the
  -- workspace/didChangeConfiguration Neovim sends after it. None given: the server's defaults.
  local settings = next(opts.settings) and { posh = opts.settings } or nil
  vim.lsp.config('posh', {
    cmd = opts.cmd,
    filetypes = opts.filetypes,
    root_markers = opts.root_markers,
    init_options = settings,
    settings = settings,
  })
  vim.lsp.enable('posh')

  local group = vim.api.nvim_create_augroup('posh', { clear = true })
  vim.api.nvim_create_autocmd('LspAttach', {
    group = group,
    desc = 'posh: inlay hints and code lenses',
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if not client or client.name ~= 'posh' then
        return
      end
      local bufnr = args.buf
      if opts.inlay_hints and client:supports_method('textDocument/inlayHint', bufnr) then
        vim.lsp.inlay_hint.enable(true, { bufnr = bufnr })
      end
      if opts.codelens and client:supports_method('textDocument/codeLens', bufnr) then
        refresh_codelens(bufnr)
        -- Lenses follow the text: the server's analysis changes with each edit and save.
        vim.api.nvim_create_autocmd({ 'BufEnter', 'InsertLeave', 'TextChanged', 'BufWritePost' }, {
          group = group,
          buffer = bufnr,
          desc = 'posh: refresh code lenses',
          callback = function()
            refresh_codelens(bufnr)
          end,
        })
      end
    end,
  })
end

return M
