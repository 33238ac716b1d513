-- posh annotation files: `#` comments, two-space indentation (entries' `- SECTION:` lines at
-- column 0, their items at two).
if vim.b.did_ftplugin then
  return
end
vim.b.did_ftplugin = 1

vim.bo.commentstring = '# %s'
vim.bo.comments = ':#'
vim.bo.expandtab = true
vim.bo.shiftwidth = 2
vim.bo.softtabstop = 2
vim.bo.tabstop = 2
vim.bo.autoindent = true
vim.bo.iskeyword = '@,48-57,_,192-255'

vim.b.undo_ftplugin = 'setl commentstring< comments< expandtab< shiftwidth< softtabstop< tabstop< autoindent< iskeyword<'
