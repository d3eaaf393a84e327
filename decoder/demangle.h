/*
 * demangle.h -- symbol names for display.
 */
#ifndef FT_DECODER_DEMANGLE_H
#define FT_DECODER_DEMANGLE_H

/* demangled C++ name (malloc'd) or NULL if sym is not a mangled name */
char *ft_demangle(const char *sym);
/* display name (malloc'd): demangled, without clone suffixes
 * ("f() [clone .cold]" -> "f()", "g.part.0" -> "g") */
char *ft_display_name(const char *sym);
/* C++ thunks (-pg logs their returns but not their calls: ignored) */
int ft_is_thunk(const char *display);

#endif
