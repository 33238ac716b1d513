" Vim syntax file
" Language:    posh annotation files (*.posh)
" Maintainer:  posh
" An entry names a command (and its subcommand), with its options in brackets, then sections of
" items:
"   grep[filters_input, no_match_status:1]:
"   - FLAGS:
"     - short:i, long:ignore-case
"   - PARAMS:
"     - type:input_file, size:list, splittable, desc:"files to search"
"   - EXAMPLES:
"     - grep -i error a.log
" posh-lsp's semantic tokens refine this where the client shows them.

if exists('b:current_syntax')
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match
syn sync minlines=20

syn match poshComment '#.*$' contains=poshTodo,@Spell
syn keyword poshTodo contained TODO FIXME XXX NOTE

" `cmd[options]:` or `cmd sub:` at column 0.
syn match poshEntry '^[^#[:space:]-][^#:[]*\ze\%(\[\|:\s*\%(#.*\)\=$\)' nextgroup=poshOptions
syn region poshOptions matchgroup=poshDelimiter start='\[' end='\]' contained oneline
      \ contains=poshOption,poshString,poshNumber,poshColon,poshComma nextgroup=poshEntryColon
syn match poshEntryColon ':' contained

" `- FLAGS:` and its kin.
syn match poshSection '^\s*-\s\+\%(FLAGS\|OPTPARAMS\|PARAMS\|EXAMPLES\):'

" An item: `  - short:c, long:columns, size:list(list_separator:(,)), desc:"..."`.
syn match poshItemDash '^\s\+-\s' nextgroup=poshItem
syn region poshItem start='\S' end='$' contained oneline
      \ contains=poshField,poshValue,poshString,poshNumber,poshColon,poshComma,poshComment

" Examples are shell command lines.
syn region poshExamples start='^\s*-\s\+EXAMPLES:' end='^\ze\S' transparent
      \ contains=poshSection,poshExampleItem,poshComment
syn match poshExampleItem '^\s\+-\s\+\zs.*$' contained contains=poshComment

" Command options, in an entry's brackets.
syn keyword poshOption contained needs_current_dir splittable_across_input filters_input
      \ reduces_input long_arg_single_dash long_args_single_dash merge output_ratio
      \ output_per_input output_within_smallest_input output_ends_lines output_ends_as_input output_holds_input
      \ no_match_status reads_env reads_home ignores_stdin makes_fifos output_to_stdout_too
      \ output_lines_of_input stdin_file_list
syn keyword poshOption contained concat rerun sum sort_merge uniq_count

" Argument fields, and their values.
syn keyword poshField contained short long desc type size default_value multiple splittable
      \ attached required config streamable file_list bounds_lines bounds_bytes dash_digits
      \ appends changes_lines list_separator specific_size
syn keyword poshValue contained input_file output_file removed_file str list

syn region poshString start='"' skip='\\"' end='"' contained oneline
syn match poshNumber '\<\d\+\%(\.\d\+\)\=\>' contained
syn match poshColon ':' contained
syn match poshComma ',' contained

hi def link poshComment Comment
hi def link poshTodo Todo
hi def link poshEntry Function
hi def link poshDelimiter Delimiter
hi def link poshEntryColon Delimiter
hi def link poshSection Statement
hi def link poshItemDash Delimiter
hi def link poshOption Keyword
hi def link poshField Identifier
hi def link poshValue Constant
hi def link poshString String
hi def link poshNumber Number
hi def link poshColon Delimiter
hi def link poshComma Delimiter
hi def link poshExampleItem Special

let b:current_syntax = 'posh'

let &cpo = s:cpo_save
unlet s:cpo_save
