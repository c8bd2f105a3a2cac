/* dualbench's C CGI program for study S2: answers the same 45-byte page as the static
 * file, through the CGI interface (one process per request). Built by dualbench with gcc. */
#include <stdio.h>

int main(void)
{
    fputs("Content-Type: text/html\r\n\r\n"
          "<html><body><h1>It works!</h1></body></html>\n",
          stdout);
    return 0;
}
